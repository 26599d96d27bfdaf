"""Two pool managers on one PostgreSQL database: the leader is SIGKILLed, twice, mid-run.

Three teams' tasks hold one exclusive lock per GPU for as long as their process
lives (``dags/pools_locks.py``), so a GPU promised twice shows up as a task that
finds its locks taken. Two managers run for the fleet with 2 s cycles; the one
that leads is killed, the other must take over within two cycles; the killed one
is started again and stands by; then the new leader is killed too. Every run
must succeed, no lock be found taken, and no preemption be applied twice (one
record per preempted try). Prints the figures.

Time: about 4.5 min on 2 cores (``tests/DURATIONS.md``: 273 s): randomized runs of locking
tasks through two kills of the leader, each take-over waiting out the lease.
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
from tests.pool_manager.conftest import HERE, leader, managed_stack, query, trigger
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow
TEAMS = ("a", "b", "c")
RUNS = 24
INTERVAL = 2.0
LEASE = 2.5
MANAGERS = ("pool-manager", "pool-manager-2")


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, locks: Path, managers_db: str
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager-failover")
    dag_ids = tuple(f"locks_{team}" for team in TEAMS)
    env = {"QUOTA_TEST_LOCK_DIR": str(locks)}
    options = ("--database", managers_db, "--lease", f"{LEASE:g}")
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
            first = stack.processes.started["pool-manager"]
            stack.processes.start(MANAGERS[1], first.command, first.env, first.cwd)
            yield stack


def test_the_standby_takes_over_within_two_cycles_and_no_gpu_is_promised_twice(
    stack: Stack, locks: Path, managers_db: str
) -> None:
    api = stack.api
    shuffle = random.Random(20261204)
    triggered: list[tuple[str, str]] = []
    takeovers: list[float] = []
    kill_after = {RUNS // 3, 2 * RUNS // 3}
    for n in range(RUNS):
        team = TEAMS[n % 3] if n >= 3 else "a"
        seconds = shuffle.choice([3, 6, 10])
        triggered.append((f"locks_{team}", trigger(api, f"locks_{team}", seconds)))
        time.sleep(shuffle.choice([0.5, 1, 2]))
        if n in kill_after:
            wait_for("a leader", lambda: leader(stack, managers_db) is not None, 30)
            victim = leader(stack, managers_db)
            assert victim is not None
            killed = time.monotonic()
            stack.processes.kill(victim)
            wait_for(
                "the standby to take over",
                lambda v=victim: leader(stack, managers_db) not in (None, v),  # type: ignore[misc]
                30,
                every=0.1,
            )
            takeovers.append(time.monotonic() - killed)
            stack.processes.restart(victim)  # it comes back as the standby

    def finished() -> bool:
        states = [api.run_state(dag_id, run_id) for dag_id, run_id in triggered]
        return all(state in ("success", "failed") for state in states)

    wait_for("every run to finish", finished, 900, stack.processes, every=5)
    violations = (
        (locks / "violations.log").read_text() if (locks / "violations.log").exists() else ""
    )
    outcomes: Counter[str] = Counter()
    for dag_id, run_id in triggered:
        answer = api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        outcomes.update(ti["state"] for ti in answer["task_instances"])
    preempted_tries = query(
        managers_db,
        "SELECT dag_id, run_id, task_id, map_index, try_number, count(*) "
        "FROM quota_preemption GROUP BY 1, 2, 3, 4, 5",
    )
    epoch = query(managers_db, "SELECT epoch FROM quota_manager_lease")[0][0]
    twice = [row for row in preempted_tries if row[5] > 1]
    print(
        f"\n{sum(outcomes.values())} tasks: {dict(outcomes)}; take-overs after SIGKILL "
        f"{', '.join(f'{s:.1f} s' for s in takeovers)} (cycle {INTERVAL:g} s, lease "
        f"{LEASE:g} s); leaders {epoch}; preempted tries {len(preempted_tries)}, applied "
        f"twice {len(twice)}; lock violations {len(violations.splitlines())}"
    )
    assert violations == "", violations
    assert outcomes == {"success": 3 * RUNS}
    assert twice == []
    assert len(takeovers) == 2
    assert all(seconds <= 2 * INTERVAL for seconds in takeovers), takeovers
