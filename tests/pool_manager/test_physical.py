"""Physical truth under the pool manager: 108 random tasks never find their GPUs taken.

Three teams' tasks of several sizes and priorities (``dags/pools_locks.py``)
each hold one exclusive lock per GPU for as long as their process lives; the
fleet has as many locks as GPUs. Runs are triggered at random moments with
random durations, so tasks borrow, are reclaimed and preempt each other. A
task that finds fewer free locks than its ``pool_slots`` would mean the manager
opened a pool slot while a GPU was still in use. Prints the figures.

Time: about 6 min on 2 cores (``tests/DURATIONS.md``: 354 s): 108 real task processes of 2
to 15 s, 36 runs triggered over about a minute, with reclaims and preemptions between them.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack
from tests.pool_manager.conftest import HERE, managed_stack, trigger, unadmitted_starts
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow
TEAMS = ("a", "b", "c")
RUNS_PER_TEAM = 12
TASKS_PER_RUN = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, locks: Path) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager-locks")
    dag_ids = tuple(f"locks_{team}" for team in TEAMS)
    env = {"QUOTA_TEST_LOCK_DIR": str(locks)}
    # SQLite's single writer cannot keep up with this many runs at once: PostgreSQL
    for database in postgres_database():
        with managed_stack(workdir, HERE / "fleet_locks.yaml", dag_ids, env, database) as stack:
            yield stack


def test_no_task_ever_finds_fewer_free_gpus_than_its_pool_slots(stack: Stack, locks: Path) -> None:
    api = stack.api
    shuffle = random.Random(20261203)
    # team a starts alone and borrows the idle GPUs; the others' runs then reclaim them
    rest = [(team, n) for team in TEAMS for n in range(RUNS_PER_TEAM)][4:]
    shuffle.shuffle(rest)
    runs = [("a", n) for n in range(4)] + rest
    started = time.monotonic()
    triggered = []
    for team, _ in runs:
        seconds = shuffle.choice([2, 4, 8, 15])
        triggered.append((f"locks_{team}", trigger(api, f"locks_{team}", seconds)))
        time.sleep(15 if len(triggered) == 4 else shuffle.choice([0, 0.5, 1, 3]))

    def finished() -> bool:
        states = [api.run_state(dag_id, run_id) for dag_id, run_id in triggered]
        if not all(state in ("success", "failed") for state in states):
            return False
        # a run can end a moment before a clear made in the same instant reopens it (the
        # manager decides on what it read; Airflow's clear cannot say "only if still running")
        for dag_id, run_id in triggered:
            answer = api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
            if any(ti["state"] not in ("success", "failed") for ti in answer["task_instances"]):
                return False
        return True

    wait_for("every run to finish", finished, 1200, stack.processes, every=5)
    elapsed = time.monotonic() - started
    violations = (
        (locks / "violations.log").read_text() if (locks / "violations.log").exists() else ""
    )
    outcomes: Counter[str] = Counter()
    tries: Counter[int] = Counter()
    preempted = 0
    for dag_id, run_id in triggered:
        answer = api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        for ti in answer["task_instances"]:
            outcomes[ti["state"]] += 1
            tries[ti["try_number"]] += 1
            preempted += (ti["note"] or "").startswith("Cleared by the quota pool manager")
    unadmitted = unadmitted_starts(stack)
    print(
        f"\n{len(triggered) * TASKS_PER_RUN} tasks in {elapsed:.0f} s: {dict(outcomes)}; "
        f"tries {dict(sorted(tries.items()))}; {preempted} tasks preempted at least once; "
        f"lock violations: {len(violations.splitlines())}; started without the manager "
        f"admitting them, before a task of their pool that came first: {unadmitted}"
    )
    assert violations == "", violations
    assert outcomes == {"success": len(triggered) * TASKS_PER_RUN}
    assert preempted > 0, "the run must exercise preemption"
