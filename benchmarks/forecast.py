"""How long a start forecast of a busy fleet takes (issue 24).

Run: ``.venv/bin/python benchmarks/forecast.py [--repeat N] [--waiting N] [--running N]``

The fleet: 12 shares (LEND_AND_BORROW without limit and with 50 / 200 %
limits, LEND, RESERVE; a third with in-share preemption), two units
(``ml.p4d.24xlarge`` 1,500, ``ml.g5.12xlarge`` 900), about 500 running jobs
(490: drawn at random while they fit) filling it, some borrowing, those of a
quarter of the shares protected by ``min_runtime_seconds``, and 2,000 waiting,
with priorities 0..90 and demands of 1 to 16 instances.
Durations come from :func:`estimate_duration`: each job's task (share and size)
has a log-normal history of 0 to 40 earlier runs (no history = a guess), a
tenth of the jobs an upper bound, running jobs their elapsed time.

Printed: the median of ``--repeat`` runs of :func:`forecast` with its
defaults (three plays with drawn durations and two at the 25th and 75th
percentile, events of each minute or each 2 % of the time from now applied
together; the estimates are made once, before, and timed apart), the instants
the plays settled, and how many jobs got a start. Exits 1 when the median is
over ``forecast_2k_waiting_500_running_seconds`` of ``bounds.yaml``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from bounds import bound

from airflow_quota_provider.core import QueueConfig, QueueState, RunningJob, Share, Sharing
from airflow_quota_provider.core.durations import (
    DurationEstimate,
    DurationHistory,
    estimate_duration,
)
from airflow_quota_provider.core.forecast import forecast
from airflow_quota_provider.core.jobs import WaitingJob

UNITS = {"ml.p4d.24xlarge": 1500, "ml.g5.12xlarge": 900}
SHARES = 12
SIZES = (1, 1, 2, 2, 4, 8, 16)
NOW = 1_000_000.0


def make_config() -> QueueConfig:
    kinds = [
        (Sharing.LEND_AND_BORROW, -1),
        (Sharing.LEND_AND_BORROW, 50),
        (Sharing.LEND, -1),
        (Sharing.LEND_AND_BORROW, 200),
        (Sharing.RESERVE, -1),
        (Sharing.LEND_AND_BORROW, -1),
    ]
    shares = tuple(
        Share(
            name=f"team-{i:02d}",
            capacity={unit: total // SHARES for unit, total in UNITS.items()},
            sharing=kinds[i % len(kinds)][0],
            borrow_limit=kinds[i % len(kinds)][1],
            in_share_preemption=i % 3 == 0,
            min_runtime_seconds=600.0 if i % 4 == 1 else None,
        )
        for i in range(SHARES)
    )
    return QueueConfig("bench", dict(UNITS), shares)


def make_state(config: QueueConfig, waiting: int, running: int, rng: random.Random) -> QueueState:
    """A full fleet: running jobs drawn at random while they fit the queue and their
    share's limit (so some borrow), then the waiting jobs."""
    state = QueueState(config)
    units = list(UNITS)
    for attempt in range(100 * running):
        if state.running_count >= running:
            break
        share = config.shares[rng.randrange(SHARES)]
        unit, count = rng.choice(units), rng.choice(SIZES)
        used = sum(state.usage(s.name).get(unit, 0) for s in config.shares)
        held = state.usage(share.name).get(unit, 0)
        if used + count > UNITS[unit] or held + count > config.share_limit(share, unit):
            continue
        started = NOW - rng.uniform(0, 6 * 3600)
        borrowing = held + count > share.owns(unit)
        state.add_running(
            RunningJob(
                f"r{attempt}",
                share.name,
                {unit: count},
                rng.randrange(0, 100, 10),
                started,
                submitted=started,
                borrowing=borrowing,
            )
        )
    for i in range(waiting):
        share = config.shares[rng.randrange(SHARES)]
        state.add_waiting(
            WaitingJob(
                f"w{i}",
                share.name,
                {rng.choice(units): rng.choice(SIZES)},
                rng.randrange(0, 100, 10),
                NOW - rng.uniform(0, 3600),
            )
        )
    return state


def make_estimates(state: QueueState, rng: random.Random) -> dict[str, DurationEstimate]:
    """Every job's estimate from its task's history (share and size), as a caller would."""
    histories: dict[tuple[str, int], DurationHistory] = {}
    estimates = {}
    jobs: list[RunningJob | WaitingJob] = [*state.running(), *state.waiting()]
    for job in jobs:
        key = (job.share, sum(job.demand.values()))
        if key not in histories:
            runs = rng.choice((0, 3, 10, 40))
            median = rng.uniform(1800, 4 * 3600)
            histories[key] = DurationHistory(
                median * rng.lognormvariate(0, 0.6) for _ in range(runs)
            )
        elapsed = job.progress(NOW) if isinstance(job, RunningJob) else 0.0
        bounded = 8 * 3600.0 if rng.random() < 0.1 else None
        estimates[job.id] = estimate_duration(histories[key], max_runtime=bounded, elapsed=elapsed)
    return estimates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--waiting", type=int, default=2000)
    parser.add_argument("--running", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(24)
    config = make_config()
    state = make_state(config, args.waiting, args.running, rng)
    start = time.perf_counter()
    estimates = make_estimates(state, rng)
    estimating = time.perf_counter() - start
    walls = []
    result = None
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = forecast(state, NOW, estimates, preemption_delay=60.0)
        walls.append(time.perf_counter() - start)
    assert result is not None
    wall, limit = statistics.median(walls), bound("forecast_2k_waiting_500_running_seconds")
    starts = result.starts.values()
    started = sum(1 for s in starts if s.likely is not None)
    print(
        f"python {sys.version.split()[0]}, {SHARES} shares, 2 units, {state.running_count} "
        f"running, {state.waiting_count} waiting"
    )
    print(f"estimates: {len(estimates):,} in {estimating * 1000:.1f} ms (made once, not timed)")
    print(
        f"{result.instants:,} instants over 5 plays; {started:,} of {len(result.starts):,} waiting "
        f"jobs start, {sum(1 for s in starts if s.victims)} by preemption, "
        f"{sum(1 for s in starts if s.guess)} resting on a guessed duration"
    )
    runs = ", ".join(f"{w:.3f}" for w in walls)
    verdict = "within" if wall <= limit else "OVER"
    print(
        f"forecast: {wall:.3f} s median of {args.repeat} ({runs}); {verdict} the {limit:g} s bound"
    )
    return 0 if wall <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
