"""How big a month of usage history of a 20-share fleet is, and how fast its report is (issue 23).

Run: ``.venv/bin/python benchmarks/history_size.py [--days N] [--repeat N] [--load X]``

The workload (synthetic, seeded; the Helios trace has 16 teams, not 20): 20
shares over two units (``ml.p4d.24xlarge`` 160, ``ml.g5.12xlarge`` 80, each share
owning a twentieth), LEND_AND_BORROW without limit and with 100 % limits, LEND
and RESERVE, a third with in-share preemption. Jobs arrive at random over the
month, busier shares three times as often as quiet ones (so the busy ones
borrow and get reclaimed), priorities 0..90, demands of 1 to 8 instances,
log-normal durations (median about 1 h), checkpoints every 30 min, a 60 s
preemption delay; the load is the offered instance-hours over the capacity's.
The simulator replays it in virtual time (:mod:`airflow_quota_provider.simulation`)
and a :class:`~airflow_quota_provider.core.history.Recorder` observes the state
each time the clock moves, as the pool manager would each cycle; starts and
preemptions come from the replay's attempts.

Printed: the replay's jobs, starts and preemptions; the change records (and
events) and the bytes they take as CSV rows (epoch ms, share, unit, the seven
figures; events likewise), raw and gzipped; the same once downsampled with the
default :class:`~airflow_quota_provider.core.retention.Retention` at the month's
end (changes kept 7 days, 5-minute buckets until 14 days, then hourly ones);
the median of ``--repeat`` runs of :func:`~airflow_quota_provider.core.showback.usage_report`
over the month, and of the report with the page's per-day waits and hourly
utilization.
Exits 1 when a figure is over its ``history_*`` bound of ``bounds.yaml``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping

from bounds import bound

from airflow_quota_provider.core import QueueConfig, QueueState, Share, Sharing
from airflow_quota_provider.core.history import (
    History,
    JobStart,
    PreemptionRecord,
    Recorder,
    state_figures,
)
from airflow_quota_provider.core.retention import Retention, downsample
from airflow_quota_provider.core.showback import daily, usage_report, utilization
from airflow_quota_provider.simulation.scenario import JobSpec, Scenario
from airflow_quota_provider.simulation.simulator import Result, Simulator

UNITS = {"ml.p4d.24xlarge": 160, "ml.g5.12xlarge": 80}
SHARES = 20
SIZES = (1, 1, 2, 2, 4, 4, 8)
T0 = 1_795_996_800_000
"""2026-11-30 00:00 UTC: the replay's time 0, in epoch milliseconds."""
KINDS = [
    (Sharing.LEND_AND_BORROW, -1),
    (Sharing.LEND_AND_BORROW, 100),
    (Sharing.LEND, -1),
    (Sharing.LEND_AND_BORROW, -1),
    (Sharing.RESERVE, -1),
]


def ms(seconds: float) -> int:
    return T0 + round(seconds * 1000)


def make_scenario(days: float, load: float, rng: random.Random) -> Scenario:
    shares = tuple(
        Share(
            name=f"team-{i:02d}",
            capacity={unit: total // SHARES for unit, total in UNITS.items()},
            sharing=KINDS[i % len(KINDS)][0],
            borrow_limit=KINDS[i % len(KINDS)][1],
            in_share_preemption=i % 3 == 0,
        )
        for i in range(SHARES)
    )
    config = QueueConfig("history-bench", dict(UNITS), shares)
    weights = [3.0 if i % 4 == 0 else 1.0 for i in range(SHARES)]
    span = days * 86_400
    mean_size, mean_duration = sum(SIZES) / len(SIZES), 60 + math.exp(8.2 + 0.5)
    jobs_count = round(load * sum(UNITS.values()) * span / (mean_size * mean_duration))
    jobs = []
    for i in range(jobs_count):
        share = rng.choices(shares, weights)[0]
        jobs.append(
            JobSpec(
                id=f"j{i}",
                share=share.name,
                demand={rng.choice(list(UNITS)): rng.choice(SIZES)},
                duration=60 + rng.lognormvariate(8.2, 1.0),
                submit=rng.uniform(0, span),
                priority=rng.randrange(0, 100, 10),
                checkpoint_interval=1800.0,
            )
        )
    return Scenario(config, tuple(jobs), preemption_delay=60.0)


class Observer:
    """Records the fleet's figures each time the simulator's clock moves on."""

    def __init__(self) -> None:
        self.recorder = Recorder()
        self.observations = 0

    def elapse(
        self, start: float, end: float, state: QueueState, pending: Mapping[str, Mapping[str, int]]
    ) -> None:
        self.observations += 1
        self.recorder.observe(ms(start), state_figures(state))


def events(result: Result) -> tuple[list[JobStart], list[PreemptionRecord]]:
    """Every start and preemption of the replay, as a recorder is told them."""
    starts, preemptions = [], []
    for job in result.jobs.values():
        spec, queued = job.spec, job.spec.submit
        for number, attempt in enumerate(job.attempts, 1):
            starts.append(
                JobStart(
                    ms(attempt.start), spec.share, spec.id, dict(spec.demand), number, ms(queued)
                )
            )
            if attempt.outcome == "PREEMPTED" and attempt.end is not None:
                by = attempt.preempted_by
                preemptions.append(
                    PreemptionRecord(
                        at=ms(attempt.end),
                        kind=attempt.preemption.value if attempt.preemption else "",
                        share=spec.share,
                        job_id=spec.id,
                        demand=dict(spec.demand),
                        preemptor_share=result.jobs[by].spec.share if by in result.jobs else None,
                        preemptor=by,
                        seconds_lost=attempt.work_lost / sum(spec.demand.values()),
                    )
                )
                queued = attempt.end
    return starts, preemptions


def rows(history: History) -> Iterable[list[object]]:
    for change in history.changes:
        yield [change.at, change.share or "", change.unit, *change.figures.values()]
    for bucket in history.buckets:
        yield [bucket.start, bucket.end, bucket.share or "", bucket.unit, *bucket.totals.values()]
    for start in history.starts:
        yield [start.at, start.share, start.job_id, start.attempt, start.queued_since]
    for p in history.preemptions:
        yield [p.at, p.kind, p.share, p.job_id, p.preemptor_share, p.preemptor, p.seconds_lost]


def size(history: History) -> tuple[int, int]:
    """Bytes of the history as CSV rows, raw and gzipped."""
    text = io.StringIO()
    csv.writer(text).writerows(rows(history))
    data = text.getvalue().encode()
    return len(data), len(gzip.compress(data))


def timed(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--load", type=float, default=0.9)
    args = parser.parse_args()
    scenario = make_scenario(args.days, args.load, random.Random(23))
    observer = Observer()
    began = time.perf_counter()
    end = args.days * 86_400
    result = Simulator(scenario, record_timeline=False, observer=observer).run(until=end)
    replayed = time.perf_counter() - began
    starts, preemptions = events(result)
    recorded = observer.recorder.history(end=ms(end))
    history = History(recorded.end, recorded.changes, (), tuple(preemptions), tuple(starts))
    raw, zipped = size(history)
    kept = downsample(history, history.end, Retention())
    kept_raw, kept_zipped = size(kept)
    since, until = T0, history.end
    report = timed(lambda: usage_report(history, since, until), args.repeat)
    page = timed(
        lambda: (
            usage_report(history, since, until),
            daily(history, since, until),
            utilization(history, since, until, 3_600_000),
        ),
        args.repeat,
    )
    kept_report = timed(lambda: usage_report(kept, since, until), args.repeat)
    print(
        f"{args.days:g} days, {SHARES} shares, 2 units, load {args.load:g}: "
        f"{len(scenario.jobs):,} jobs, {len(starts):,} starts, {len(preemptions):,} preemptions; "
        f"replayed in {replayed:.1f} s with {observer.observations:,} observations"
    )
    print(
        f"history: {len(history.changes):,} change records + "
        f"{len(starts) + len(preemptions):,} events: {raw / 1e6:.2f} MB as CSV, "
        f"{zipped / 1e6:.2f} MB gzipped"
    )
    print(
        f"downsampled (changes for 7 days, 5-minute buckets until 14, then hourly): "
        f"{len(kept.changes):,} changes, "
        f"{len(kept.buckets):,} buckets + events: {kept_raw / 1e6:.2f} MB as CSV, "
        f"{kept_zipped / 1e6:.2f} MB gzipped"
    )
    print(
        f"usage report over the month: {report * 1000:.0f} ms (downsampled: "
        f"{kept_report * 1000:.0f} ms); with per-day waits and hourly utilization "
        f"{page * 1000:.0f} ms (median of {args.repeat})"
    )
    over = [
        f"{name} {value:g} > {bound(name):g}"
        for name, value in (
            ("history_month_20_shares_change_records", len(history.changes)),
            ("history_month_20_shares_megabytes", raw / 1e6),
            ("history_month_20_shares_report_seconds", report),
        )
        if value > bound(name)
    ]
    for line in over:
        print(f"over bound: {line}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
