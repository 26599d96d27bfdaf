"""Physical truth under two pool managers in HA: random tasks never find their GPUs taken,
and the standby takes over within two cycles when the leader is SIGKILLed.

Three teams' tasks of several sizes and priorities (``dags/pools_locks.py``)
each hold one exclusive lock per GPU for as long as their process lives; the
fleet has as many locks as GPUs. Runs are triggered at random moments with
random durations, so tasks borrow, are reclaimed and preempt each other. A
task that finds fewer free locks than its pool slots would mean a manager
opened a pool slot while a GPU was still in use.

Two managers with 2 s cycles run for the fleet on one PostgreSQL database. The one
that leads is SIGKILLed a third of the way through the runs, the other must take over
within two cycles; the killed one is started again and stands by; two thirds of the way
through, the new leader is killed too. Every run must succeed, no lock be found taken,
and no preemption be applied twice (one record per preempted try). Prints the figures.

The fleet's usage history, recorded by whichever manager led, must come through both
take-overs whole: one start per try that ran, one record per preemption, and figures
that add up at every moment (``history_checks.py``).

Between the kills one manager leads alone, as a fleet without a standby runs: this one
run checks both what a single manager must never do and what a take-over must never do
(they were two runs, 108 and 72 tasks, of the same lock-holding tasks).

Time: about 4 min on 2 cores (``tests/DURATIONS.md``): 72 real task processes of 2 to 15 s,
24 runs triggered over about a minute, with reclaims and preemptions between them, and two
take-overs each waiting out the lease.
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
from tests.pool_manager.conftest import (
    HERE,
    kill_the_leader,
    managed_stack,
    query,
    trigger,
    unadmitted_starts,
)
from tests.pool_manager.history_checks import conservation_breaks, recorded
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow
TEAMS = ("a", "b", "c")
RUNS_PER_TEAM = 8
TASKS_PER_RUN = 3
INTERVAL = 2.0
LEASE = 2.5
MANAGERS = ("pool-manager", "pool-manager-2")


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, locks: Path, managers_db: str
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager-locks")
    dag_ids = tuple(f"locks_{team}" for team in TEAMS)
    env = {"QUOTA_TEST_LOCK_DIR": str(locks)}
    options = ("--database", managers_db, "--lease", f"{LEASE:g}")
    # SQLite's single writer cannot keep up with this many runs at once: PostgreSQL
    for airflow_db in postgres_database():
        with managed_stack(
            workdir,
            HERE / "fleet_locks.yaml",
            dag_ids,
            env,
            airflow_db,
            manager_args=options,
            interval=INTERVAL,
        ) as stack:
            first = stack.processes.started[MANAGERS[0]]
            stack.processes.start(MANAGERS[1], first.command, first.env, first.cwd)
            yield stack


def test_no_task_finds_its_gpus_taken_and_the_standby_takes_over_within_two_cycles(
    stack: Stack, locks: Path, managers_db: str
) -> None:
    api = stack.api
    shuffle = random.Random(20261203)
    # team a starts alone and borrows the idle GPUs; the others' runs then reclaim them
    rest = [(team, n) for team in TEAMS for n in range(RUNS_PER_TEAM)][4:]
    shuffle.shuffle(rest)
    runs = [("a", n) for n in range(4)] + rest
    kill_after = {len(runs) // 3, 2 * len(runs) // 3}
    started, began = time.monotonic(), time.time()
    triggered: list[tuple[str, str]] = []
    takeovers: list[float] = []
    for team, _ in runs:
        seconds = shuffle.choice([2, 4, 8, 15])
        triggered.append((f"locks_{team}", trigger(api, f"locks_{team}", seconds)))
        time.sleep(15 if len(triggered) == 4 else shuffle.choice([0, 0.5, 1, 3]))
        if len(triggered) in kill_after:
            takeovers.append(kill_the_leader(stack, managers_db)[1])

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
    preempted_tries = query(
        managers_db,
        "SELECT dag_id, run_id, task_id, map_index, try_number, count(*) "
        "FROM quota_preemption GROUP BY 1, 2, 3, 4, 5",
    )
    twice = [row for row in preempted_tries if row[5] > 1]
    epoch = query(managers_db, "SELECT epoch FROM quota_manager_lease")[0][0]
    # the fleet's history, as two managers and two take-overs recorded it
    time.sleep(2 * INTERVAL)  # a cycle past the last run's end
    history = recorded(managers_db, HERE / "fleet_locks.yaml", began, time.time())
    starts = Counter((start.job_id, start.attempt) for start in history.starts)
    print(
        f"\n{len(triggered) * TASKS_PER_RUN} tasks in {elapsed:.0f} s: {dict(outcomes)}; "
        f"tries {dict(sorted(tries.items()))}; {preempted} tasks preempted at least once; "
        f"lock violations: {len(violations.splitlines())}; take-overs after SIGKILL "
        f"{', '.join(f'{s:.1f} s' for s in takeovers)} (cycle {INTERVAL:g} s, lease "
        f"{LEASE:g} s); leaders {epoch}; preempted tries {len(preempted_tries)}, applied "
        f"twice {len(twice)}; started without a manager admitting them, before a task of "
        f"their pool that came first: {unadmitted_starts(stack)}; history recorded: "
        f"{len(starts)} starts, {len(history.preemptions)} preemptions, "
        f"{len(history.changes)} changes"
    )
    assert violations == "", violations
    assert outcomes == {"success": len(triggered) * TASKS_PER_RUN}
    assert preempted > 0, "the run must exercise preemption"
    assert twice == []
    assert len(takeovers) == 2
    assert all(seconds <= 2 * INTERVAL for seconds in takeovers), takeovers
    # nothing lost, nothing counted twice across the take-overs: every try that ran is
    # one start, every preemption one record, and the figures add up at every moment
    assert conservation_breaks(history, {"gpu": 8}) == []
    assert [start for start, count in starts.items() if count > 1] == []
    assert len(starts) == sum(number * count for number, count in tries.items()), starts
    assert len({job for job, _ in starts}) == len(triggered) * TASKS_PER_RUN
    assert len(history.preemptions) == len(preempted_tries)
