"""How big a month of a 20-share pools fleet's recorded history is in the pool manager's
database, how long reading 30 days of it takes, and what recording adds to a cycle (issue 35).

Run: ``.venv/bin/python benchmarks/pools_history_db.py [--days N] [--database URL]
[--part size|cycle|all]``

**Size and read** (``--part size``). The workload of ``benchmarks/history_size.py`` (20
shares over two units, a month at load 0.9, replayed by the simulator in virtual time)
recorded as the pool manager records it: each time the clock moves, the fleet's figures
are compared with the ones last recorded and only changes are written
(:class:`~airflow_quota_provider.airflow_pools.history_store.HistoryStore`, one
transaction per simulated minute instead of one per cycle, which changes no row);
each start is a ``quota_history_start`` row and each preemption a ``quota_preemption``
row; the history is downsampled every simulated hour with the default retention, as
the manager does. Printed: the rows of each table and the database's size (SQLite
file, or PostgreSQL's ``pg_total_relation_size`` of the tables), then the median of
reading the last 30 days as the page and ``airflow-quota usage`` do
(:meth:`~airflow_quota_provider.airflow_pools.history_store.PoolsHistory.reading`, then
the usage report).

**Cycle cost** (``--part cycle``).
:meth:`~airflow_quota_provider.airflow_pools.recording.CycleRecording.record` on a fleet
of 20 shares with 2,000 and 20,000 task instances (the cycle benchmark's sizes), 200
cycles each, a few tasks starting and ending between cycles: median and p99 of the
seconds it adds to a cycle.

Exits 1 when a figure is over its ``pools_history_*`` bound of ``bounds.yaml``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from bounds import bound
from history_size import SHARES, events, make_scenario, ms
from sqlalchemy import text

from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.history_store import HistoryStore, PoolsHistory
from airflow_quota_provider.airflow_pools.history_tables import METADATA
from airflow_quota_provider.airflow_pools.recording import CycleRecording
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import PreemptionKind, QueueState
from airflow_quota_provider.core.history import Change, Figures, Key, changes, state_figures
from airflow_quota_provider.core.history_chart import window
from airflow_quota_provider.core.model import Backend, QueueConfig, Share, Sharing
from airflow_quota_provider.core.retention import Retention
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.simulation.simulator import Simulator

FLEET = "pools-bench"
MINUTE_MS, HOUR_MS = 60_000, 3_600_000


class Writer:
    """The manager's recording, fed by the simulator each time its clock moves."""

    def __init__(self, history: HistoryStore) -> None:
        self.history = history
        self.last: dict[Key, Figures] = {}
        self.pending: list[Change] = []
        self.flushed = 0
        self.downsampled = 0
        self.observations = 0

    def elapse(
        self, start: float, end: float, state: QueueState, pending: Mapping[str, Mapping[str, int]]
    ) -> None:
        at = ms(start)
        self.observations += 1
        figures = state_figures(state)
        made = changes(self.last, figures, at)
        for change in made:
            if change.figures == Figures():
                self.last.pop(change.key, None)
            else:
                self.last[change.key] = change.figures
        self.pending.extend(made)
        if at - self.flushed >= MINUTE_MS:
            self.flush(at)

    def flush(self, at: int) -> None:
        self.history.write(self.pending, [], at)
        self.pending, self.flushed = [], at
        if at - self.downsampled >= HOUR_MS:
            self.history.downsample(at, Retention())
            self.downsampled = at


def database_size(store: Store) -> int:
    engine = store.engine
    if engine.dialect.name == "sqlite":
        path = engine.url.database or ""
        return Path(path).stat().st_size
    names = [*METADATA.tables, "quota_preemption"]
    with engine.connect() as connection:
        return sum(
            int(connection.execute(text(f"SELECT pg_total_relation_size('{name}')")).scalar() or 0)
            for name in names
        )


def size_part(args: argparse.Namespace, url: str) -> list[tuple[str, float]]:
    scenario = make_scenario(args.days, 0.9, random.Random(23))
    config = QueueConfig(
        FLEET,
        scenario.config.capacity,
        scenario.config.shares,
        backend=Backend.AIRFLOW_POOLS,
    )
    fleet = Fleet.of(config)
    store = Store(url)
    history = HistoryStore(store, FLEET)
    writer = Writer(history)
    end = args.days * 86_400
    began = time.perf_counter()
    result = Simulator(scenario, record_timeline=False, observer=writer).run(until=end)
    starts, preemptions = events(result)
    history.write(writer.pending, starts, ms(end))
    history.downsample(ms(end), Retention())
    for record in preemptions:
        (unit, slots), *_ = record.demand.items()
        victim = TaskKey("train", "month", record.job_id)
        by = TaskKey("train", "month", record.preemptor or "?")
        stop = Stop(
            victim,
            fleet.pool_of(record.share, unit),
            PreemptionKind(record.kind) if record.kind else PreemptionKind.RECLAIM,
            by,
            False,
            f"Cleared by the quota pool manager for {by}",
            slots,
            started=(record.at / 1000) - record.seconds_lost,
            try_number=1,
            preemptor_pool=(
                fleet.pool_of(record.preemptor_share, unit) if record.preemptor_share else None
            ),
        )
        store.record_preemption(stop, datetime.fromtimestamp(record.at / 1000, UTC))
    recorded = time.perf_counter() - began
    rows = {}
    with store.engine.connect() as connection:
        for name in [*sorted(METADATA.tables), "quota_preemption"]:
            rows[name] = int(connection.execute(text(f"SELECT count(*) FROM {name}")).scalar() or 0)
    megabytes = database_size(store) / 1e6
    source = PoolsHistory(Store(url, create=False), fleet, clock=lambda: ms(end) / 1000)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        reading = source.reading(window("30d", ms(end)))
        reading.usage()
        times.append(time.perf_counter() - start)
    read = statistics.median(times)
    print(
        f"{args.days:g} days, {SHARES} shares, 2 units: {len(scenario.jobs):,} jobs, "
        f"{len(starts):,} starts, {len(preemptions):,} preemptions; recorded in "
        f"{recorded:.1f} s ({writer.observations:,} observations)"
    )
    print("rows: " + ", ".join(f"{name} {count:,}" for name, count in rows.items()))
    print(f"database ({store.engine.dialect.name}): {megabytes:.1f} MB")
    print(f"reading the last 30 days and its usage report: {read:.2f} s (median of {args.repeat})")
    return [
        ("pools_history_month_20_shares_megabytes", megabytes),
        ("pools_history_30d_read_seconds", read),
    ]


def cycle_fleet() -> Fleet:
    shares = tuple(
        Share(name=f"team-{i:02d}", capacity={"gpu": 20}, sharing=Sharing.LEND_AND_BORROW)
        for i in range(SHARES)
    )
    return Fleet.of(QueueConfig(FLEET, {"gpu": 400}, shares, backend=Backend.AIRFLOW_POOLS))


def cycle_part(args: argparse.Namespace, url: str) -> list[tuple[str, float]]:
    fleet = cycle_fleet()
    pools = sorted(fleet.shares)
    found = []
    for count in (2_000, 20_000):
        rng = random.Random(count)
        tasks = [
            PoolTask(
                TaskKey("train", f"run-{i // 50}", f"t{i % 50}"),
                rng.choice(pools),
                1,
                1,
                0.0,
                TaskState.RUNNING if i < 400 else TaskState.SCHEDULED,
                start_date=0.0 if i < 400 else None,
                try_number=1,
            )
            for i in range(count)
        ]
        store = Store(url)
        recording = CycleRecording(HistoryStore(store, f"{FLEET}-{count}"))
        now = time.time()
        recording.record(fleet, tasks, now)
        spent = []
        for cycle in range(200):
            for _ in range(3):  # a running task ends, a waiting one starts
                ended = rng.randrange(count)
                task = tasks[ended]
                state = TaskState.OTHER if task.state.holds else TaskState.RUNNING
                tasks[ended] = PoolTask(
                    task.key,
                    task.pool,
                    1,
                    1,
                    0.0,
                    state,
                    start_date=now + cycle * 5 if state.holds else None,
                    try_number=1,
                )
            start = time.perf_counter()
            recording.record(fleet, tasks, now + cycle * 5)
            spent.append(time.perf_counter() - start)
        spent.sort()
        median, p99 = statistics.median(spent), spent[int(0.99 * len(spent)) - 1]
        print(
            f"recording a cycle of {count:,} task instances: median {median * 1000:.1f} ms, "
            f"p99 {p99 * 1000:.1f} ms ({len(spent)} cycles, {store.engine.dialect.name})"
        )
        found += [
            (f"pools_history_cycle_{count}_median_seconds", median),
            (f"pools_history_cycle_{count}_p99_seconds", p99),
        ]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--part", choices=("size", "cycle", "all"), default="all")
    parser.add_argument(
        "--database", help="a SQLAlchemy URL of an empty database (default a SQLite file)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures: list[tuple[str, float]] = []
        if args.part in ("size", "all"):
            figures += size_part(args, args.database or f"sqlite:///{folder}/size.db")
        if args.part in ("cycle", "all"):
            figures += cycle_part(args, args.database or f"sqlite:///{folder}/cycle.db")
    over = [f"{name} {value:g} > {bound(name):g}" for name, value in figures if value > bound(name)]
    for line in over:
        print(f"over bound: {line}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
