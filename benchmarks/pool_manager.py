"""How long the pool manager's decision step takes for a large fleet.

Run: ``.venv/bin/python benchmarks/pool_manager.py [--tasks N] [--repeat N]``

The fleet: 20 shares of one unit (``gpu``, 100 each, mixed RESERVE / LEND /
LEND_AND_BORROW, some with in-share preemption), so 20 managed pools; N task
instances of which a fifth hold GPUs (queued, running, deferred, a few
restarting) filling the fleet, the rest scheduled with random sizes,
priority weights and run dates. The figure is one call of ``decide`` (build
the core's state from the task list, settle it, compute every pool's slots
and every waiting task's reason), the median of ``--repeat`` runs; the bound
in bounds.yaml applies to 10,000 tasks.

Not measured here: a cycle against a real api-server (REST calls and their
latency), which needs that many task instances in Airflow.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from bounds import bound

from airflow_quota_provider.core import QueueConfig, Share, Sharing
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.pool_manager.decide import decide
from airflow_quota_provider.pool_manager.fleet import Fleet
from airflow_quota_provider.pool_manager.tasks import PoolTask, TaskKey, TaskState

SHARES = 20
PER_SHARE = 100
BOUND_MS = bound("pool_manager_decide_10k_tasks_ms")


def make_fleet() -> Fleet:
    strategies = [Sharing.LEND_AND_BORROW, Sharing.LEND, Sharing.RESERVE, Sharing.LEND_AND_BORROW]
    shares = tuple(
        Share(
            name=f"team-{i:02d}",
            capacity={"gpu": PER_SHARE},
            sharing=strategies[i % 4],
            borrow_limit=[-1, 50, 100, 200][i % 4] if strategies[i % 4].borrows else -1,
            in_share_preemption=i % 3 == 0,
        )
        for i in range(SHARES)
    )
    config = QueueConfig(
        "fleet", {"gpu": SHARES * PER_SHARE}, shares, backend=Backend.AIRFLOW_POOLS
    )
    return Fleet.of(config)


def make_tasks(fleet: Fleet, count: int, seed: int = 7) -> list[PoolTask]:
    rng = random.Random(seed)
    pools = sorted(fleet.shares)
    tasks: list[PoolTask] = []
    held = dict.fromkeys(pools, 0)
    holding = count // 5
    for n in range(count):
        pool = pools[n % len(pools)]
        slots = rng.choice([1, 1, 2, 4, 8])
        key = TaskKey(f"dag_{n % 50}", f"run_{n // 500}", f"task_{n}")
        weight = rng.choice([1, 1, 5, 10, 100])
        run_date = float(rng.randrange(0, 86_400))
        # the holders fill 90 % of each pool, so a cycle starts and preempts too
        if n < holding and held[pool] + slots <= PER_SHARE * 9 // 10:
            held[pool] += slots
            state = rng.choice([TaskState.RUNNING] * 8 + [TaskState.DEFERRED, TaskState.RESTARTING])
            tasks.append(PoolTask(key, pool, slots, weight, run_date, state, run_date + 60))
        else:
            tasks.append(PoolTask(key, pool, slots, weight, run_date, TaskState.SCHEDULED))
    return tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    fleet = make_fleet()
    tasks = make_tasks(fleet, args.tasks)
    now = 100_000.0
    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        plan = decide(fleet, tasks, now)
        times.append((time.perf_counter() - started) * 1000)
    median = statistics.median(times)
    holders = sum(task.state.holds for task in tasks)
    print(
        f"python {sys.version.split()[0]}, {len(tasks):,} task instances in {len(fleet.shares)} "
        f"pools ({holders:,} holding GPUs)"
    )
    print(
        f"decide: {median:.1f} ms median of {args.repeat} (min {min(times):.1f}, "
        f"max {max(times):.1f}); {len(plan.start)} started, {len(plan.stop)} preempted, "
        f"{len(plan.refuse)} refused, {len(plan.waiting):,} waiting"
    )
    if args.tasks == 10_000 and median > BOUND_MS:
        print(f"over the {BOUND_MS:g} ms bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
