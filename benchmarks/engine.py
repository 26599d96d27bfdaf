"""How long one scheduling cycle takes, and how it grows with the queue.

Run: ``.venv/bin/python benchmarks/engine.py [--repeat N]``

The queue: 20 shares (mixed RESERVE / LEND / LEND_AND_BORROW, some with
in-share preemption and borrow limits), 5 units, 2,000 running jobs filling
the capacity (some shares borrowing), and N waiting jobs spread over the
shares with random priorities and demands, so a cycle nominates, admits,
plans reclaims and in-share preemptions, and explains every head.

Three figures per size, medians:
- ``cycle``: ``schedule(state, now)`` on a kept state (what the emulator and
  the simulator pay per cycle);
- ``full``: building the state from plain job lists, then one cycle (what a
  caller pays that holds no state); the bound in bounds.yaml applies to this one;
- ``explain``: formatting the reason of every waiting job of that cycle (paid
  only by a caller that reads them all, e.g. a status page).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable

from bounds import bound

from airflow_quota_provider.core import (
    QueueConfig,
    QueueState,
    RunningJob,
    Share,
    Sharing,
    WaitingJob,
    schedule,
)

UNITS = [f"ml.unit{i}.xlarge" for i in range(5)]
SHARES = 20
PER_SHARE = 100  # instances of each unit a share owns; the queue has 20 x 100 of each
BOUND_MS = bound("engine_full_cycle_ms")


def make_config() -> QueueConfig:
    strategies = [Sharing.LEND_AND_BORROW, Sharing.LEND, Sharing.RESERVE, Sharing.LEND_AND_BORROW]
    shares = tuple(
        Share(
            name=f"team-{i:02d}",
            capacity=dict.fromkeys(UNITS, PER_SHARE),
            sharing=strategies[i % 4],
            borrow_limit=[-1, 50, 100, 200][i % 4] if strategies[i % 4].borrows else -1,
            in_share_preemption=i % 3 == 0,
        )
        for i in range(SHARES)
    )
    return QueueConfig("bench", dict.fromkeys(UNITS, SHARES * PER_SHARE), shares)


def make_jobs(
    config: QueueConfig, waiting_count: int, running_count: int, seed: int = 7
) -> tuple[list[RunningJob], list[WaitingJob]]:
    rng = random.Random(seed)
    borrowers = [s for s in config.shares if s.sharing.borrows]
    running: list[RunningJob] = []
    used = dict.fromkeys(UNITS, 0)
    total = config.capacity[UNITS[0]]
    for i in range(running_count):
        unit = UNITS[i % len(UNITS)]
        count = rng.choice([1, 2, 4, 8])
        if used[unit] + count > total:
            count = total - used[unit]
            if count <= 0:
                continue
        owner = rng.choice(borrowers) if i % 5 == 0 else config.shares[i % SHARES]
        used[unit] += count
        running.append(
            RunningJob(f"r{i}", owner.name, {unit: count}, rng.randrange(0, 100, 10), float(i))
        )
    waiting = [
        WaitingJob(
            f"w{i}",
            config.shares[rng.randrange(SHARES)].name,
            {rng.choice(UNITS): rng.choice([1, 2, 4, 8, 16])},
            rng.randrange(0, 100, 10),
            float(running_count + i),
        )
        for i in range(waiting_count)
    ]
    return running, waiting


def median_ms(action: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def measure(waiting_count: int, repeat: int) -> tuple[float, float, float, int, int]:
    config = make_config()
    running, waiting = make_jobs(config, waiting_count, 2000)
    state = QueueState.from_jobs(config, running, waiting)
    now = 1e6
    decisions = schedule(state, now)
    warm = median_ms(lambda: schedule(state, now), repeat)
    full = median_ms(lambda: schedule(QueueState.from_jobs(config, running, waiting), now), repeat)

    def explain() -> None:
        for reason in schedule(state, now).waiting.values():
            _ = reason.message

    explained = median_ms(explain, max(3, repeat // 4)) - warm
    return warm, full, explained, len(decisions.admit), len(decisions.preempt)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21, help="cycles timed per size")
    args = parser.parse_args()
    sizes = [1_000, 3_000, 10_000, 30_000, 100_000]
    print(f"python {sys.version.split()[0]}, 20 shares, 5 units, 2,000 running jobs")
    print(
        f"{'waiting':>8}  {'cycle ms':>9}  {'full ms':>8}  {'explain ms':>10}  {'admits':>6}  "
        f"{'preempts':>8}  {'full/(n log2 n) ns':>18}"
    )
    results = {}
    for n in sizes:
        warm, full, explained, admits, preempts = measure(n, args.repeat)
        results[n] = full
        ratio = full / (n * math.log2(n)) * 1e6
        print(
            f"{n:>8,}  {warm:>9.2f}  {full:>8.2f}  {explained:>10.1f}  {admits:>6}  "
            f"{preempts:>8}  {ratio:>18.1f}"
        )
    verdict = "within" if results[10_000] <= BOUND_MS else "OVER"
    print(
        f"10,000 waiting: {results[10_000]:.2f} ms median per full cycle, {verdict} the "
        f"{BOUND_MS:g} ms bound"
    )
    return 0 if results[10_000] <= BOUND_MS else 1


if __name__ == "__main__":
    sys.exit(main())
