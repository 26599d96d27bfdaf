"""A pools fleet's usage history in the pool manager's database: written each cycle,
downsampled now and then, read for a window.

The records are the core's (:mod:`~airflow_quota_provider.core.history`), kept in the
tables of :mod:`~airflow_quota_provider.airflow_pools.history_tables`; preemptions are
the manager's own ``quota_preemption`` rows
(:class:`~airflow_quota_provider.airflow_pools.store.Store`), read as
:class:`~airflow_quota_provider.core.history.PreemptionRecord`.

**Known until.** The history is known until the last cycle that recorded it
(``quota_history_mark``): a window read after it ends there, so a fleet whose manager
stopped shows nothing, not its last figures held. While no manager cycles (stopped,
restarting, or Airflow's api-server away), nothing is recorded; the next cycle goes on
from the figures last recorded, so the figures of the last cycle before the gap hold
across it (tasks that ended during it count until the next cycle saw them end).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.exc import IntegrityError

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.history_tables import (
    BUCKET,
    CHANGE,
    FLEET_KEY,
    MARK,
    METADATA,
    START,
)
from airflow_quota_provider.airflow_pools.schema import add_missing_columns, lacking
from airflow_quota_provider.airflow_pools.store import PreemptionRow, Store
from airflow_quota_provider.core.history import (
    NAMES,
    Bucket,
    Change,
    Figures,
    History,
    JobStart,
    Key,
    PreemptionRecord,
)
from airflow_quota_provider.core.history_chart import HistoryReading, Window
from airflow_quota_provider.core.retention import (
    Retention,
    changes_from,
    downsample,
    kept_from,
)
from airflow_quota_provider.exceptions import HistoryNotRecorded

_IN_CHUNK = 500


class HistoryStore:
    """One fleet's history in the database of ``store``.

    :param store: the manager's records; its engine is shared.
    :param fleet: the fleet's name (its config's ``job_queue``).
    :param create: make the history's tables where missing (the manager, at start); a
        reader passes false and gets
        :class:`~airflow_quota_provider.exceptions.HistoryNotRecorded` from :meth:`read`
        when the database has none (a manager of an earlier version made it).
    """

    def __init__(self, store: Store, fleet: str, *, create: bool = True) -> None:
        self.store = store
        self.engine: Engine = store.engine
        self.fleet = fleet
        if create:
            METADATA.create_all(self.engine)
            add_missing_columns(self.engine, METADATA)

    # -- writing ----------------------------------------------------------------------

    def latest(self) -> tuple[dict[Key, Figures], int]:
        """Each key's figures as last recorded (keys at zero left out), and until when the
        history is known (0: nothing recorded)."""
        with self.engine.connect() as connection:
            found = self._held(connection, None)
            return {k: c.figures for k, c in found.items() if any(c.figures.values())}, (
                self._until(connection)
            )

    def recorded_tries(self, job_ids: Iterable[str]) -> set[tuple[str, int]]:
        """``(job id, try number)`` of the starts recorded for ``job_ids``."""
        wanted = sorted(set(job_ids))
        table = START.c
        found: set[tuple[str, int]] = set()
        with self.engine.connect() as connection:
            for chunk in range(0, len(wanted), _IN_CHUNK):
                query = select(table.job_id, table.try_number).where(
                    table.fleet == self.fleet, table.job_id.in_(wanted[chunk : chunk + _IN_CHUNK])
                )
                found.update((str(row[0]), int(row[1])) for row in connection.execute(query))
        return found

    def write(self, changes: Sequence[Change], starts: Sequence[JobStart], until: int) -> None:
        """Add ``changes`` and ``starts`` (a try already recorded is left as it is) and
        note the history known until ``until``, in one transaction."""
        try:
            self._write(changes, starts, until)
        except IntegrityError:  # another manager recorded one of the tries meanwhile
            done = self.recorded_tries(start.job_id for start in starts)
            self._write(changes, [s for s in starts if (s.job_id, s.attempt) not in done], until)

    def _write(self, changes: Sequence[Change], starts: Sequence[JobStart], until: int) -> None:
        with self.engine.begin() as connection:
            if changes:
                connection.execute(insert(CHANGE), [self._change_row(c) for c in changes])
            if starts:
                connection.execute(insert(START), [self._start_row(s) for s in starts])
            self._mark(connection, recorded_until=until)

    def downsample(self, now: int, retention: Retention) -> None:
        """Keep the history as ``retention`` does at ``now`` (epoch ms): changes older than
        it keeps turned into buckets, buckets and starts older than it keeps dropped."""
        with self.engine.begin() as connection:
            until = self._until(connection)
            if not until:
                return
            if until <= kept_from(now, retention):  # all of it is older than kept
                for table in (CHANGE, BUCKET, START):
                    connection.execute(delete(table).where(table.c.fleet == self.fleet))
                self._mark(connection, downsampled_at=now)
                return
            cut = changes_from(until, now, retention)
            older = History(
                end=until,
                changes=tuple(self._changes(connection, None, cut + 1)),
                buckets=tuple(self._buckets(connection, None, None)),
            )
            kept = downsample(older, now, retention)
            before = {change.key for change in older.changes if change.at == cut}
            opening = [c for c in kept.changes if c.at == cut and c.key not in before]
            fleet = CHANGE.c.fleet == self.fleet
            connection.execute(delete(CHANGE).where(fleet, CHANGE.c.at < cut))
            if opening:
                connection.execute(insert(CHANGE), [self._change_row(c) for c in opening])
            self._replace_buckets(connection, older.buckets, kept.buckets)
            connection.execute(
                delete(START).where(
                    START.c.fleet == self.fleet, START.c.at < kept_from(now, retention)
                )
            )
            self._mark(connection, downsampled_at=now)

    def downsampled_at(self) -> int | None:
        """When the history was last downsampled (epoch ms), if ever."""
        with self.engine.connect() as connection:
            row = connection.execute(
                select(MARK.c.downsampled_at).where(MARK.c.fleet == self.fleet)
            ).first()
        return None if row is None or row[0] is None else int(row[0])

    # -- reading ----------------------------------------------------------------------

    def read(self, fleet: Fleet, since: int, until: int) -> History:
        """The history over ``[since, until)`` (epoch ms), known until the last recorded
        cycle: each key's figures at ``since`` and its changes after, the buckets, starts
        and preemptions of the window. Preemptions name their shares by ``fleet``'s pools.
        :class:`~airflow_quota_provider.exceptions.HistoryNotRecorded` if the database
        has no history tables, or no cycle recorded this fleet's history yet."""
        missing = lacking(self.engine, METADATA)
        if missing:
            raise HistoryNotRecorded(
                self.fleet,
                "its pool manager's database lacks the history's tables "
                f"({', '.join(missing)}): a manager of this version adds them when it starts",
            )
        with self.engine.connect() as connection:
            known = self._until(connection)
            if not known:
                raise HistoryNotRecorded(
                    self.fleet, "no pool manager of this version has cycled for it yet"
                )
            opening = self._held(connection, since)
            changes = [
                *sorted(opening.values(), key=lambda c: c.at),
                *self._changes(connection, since + 1, until),
            ]
            buckets = self._buckets(connection, since, until)
            starts = [
                self._start(row)
                for row in connection.execute(
                    select(START)
                    .where(START.c.fleet == self.fleet, START.c.at >= since, START.c.at < until)
                    .order_by(START.c.at, START.c.id)
                )
            ]
        stops = self.store.preemptions_between(since, until)
        return History(
            end=min(until, known),
            changes=tuple(changes),
            buckets=tuple(buckets),
            preemptions=tuple(preemption_record(fleet, row) for row in stops),
            starts=tuple(starts),
        )

    # -- rows -------------------------------------------------------------------------

    def _held(self, connection: Connection, at: int | None) -> dict[Key, Change]:
        """Each key's last change at or before ``at`` (``None``: ever)."""
        table = CHANGE.c
        conditions = [table.fleet == self.fleet]
        if at is not None:
            conditions.append(table.at <= at)
        last = (
            select(table.share, table.unit, func.max(table.at).label("at"))
            .where(*conditions)
            .group_by(table.share, table.unit)
            .subquery()
        )
        query = (
            select(*_CHANGE_COLUMNS)
            .join(
                last,
                and_(table.share == last.c.share, table.unit == last.c.unit, table.at == last.c.at),
            )
            .where(table.fleet == self.fleet)
            .order_by(table.id)
        )
        found: dict[Key, Change] = {}
        for row in connection.execute(query):
            change = _change(row)
            found[change.key] = change
        return found

    def _changes(self, connection: Connection, since: int | None, until: int) -> Iterator[Change]:
        """The changes in ``[since, until)`` in time order."""
        table = CHANGE.c
        conditions = [table.fleet == self.fleet, table.at < until]
        if since is not None:
            conditions.append(table.at >= since)
        query = select(*_CHANGE_COLUMNS).where(*conditions).order_by(table.at, table.id)
        return (_change(row) for row in connection.execute(query))

    def _buckets(
        self, connection: Connection, since: int | None, until: int | None
    ) -> list[Bucket]:
        table = BUCKET.c
        conditions = [table.fleet == self.fleet]
        if since is not None:
            conditions.append(table.end > since)
        if until is not None:
            conditions.append(table.start < until)
        query = select(*_BUCKET_COLUMNS).where(*conditions)
        query = query.order_by(table.start, table.share, table.unit)
        return [_bucket(row) for row in connection.execute(query)]

    def _replace_buckets(
        self, connection: Connection, before: Sequence[Bucket], after: Sequence[Bucket]
    ) -> None:
        """Delete the buckets of ``before`` not in ``after`` and add the others."""
        gone, new = set(before) - set(after), set(after) - set(before)
        table = BUCKET.c
        for bucket in gone:
            connection.execute(
                delete(BUCKET).where(
                    table.fleet == self.fleet,
                    table.start == bucket.start,
                    table.end == bucket.end,
                    table.share == (bucket.share or FLEET_KEY),
                    table.unit == bucket.unit,
                )
            )
        if new:
            connection.execute(
                insert(BUCKET),
                [
                    {
                        "fleet": self.fleet,
                        "start": b.start,
                        "end": b.end,
                        "share": b.share or FLEET_KEY,
                        "unit": b.unit,
                        **dict(zip(NAMES, b.totals.values(), strict=True)),
                    }
                    for b in sorted(new, key=lambda b: (b.start, b.share or "", b.unit))
                ],
            )

    def _mark(self, connection: Connection, **values: int) -> None:
        table = MARK.c
        done = connection.execute(update(MARK).where(table.fleet == self.fleet).values(**values))
        if not done.rowcount:
            connection.execute(
                insert(MARK).values(fleet=self.fleet, **{"recorded_until": 0, **values})
            )

    def _until(self, connection: Connection) -> int:
        row = connection.execute(
            select(MARK.c.recorded_until).where(MARK.c.fleet == self.fleet)
        ).first()
        return 0 if row is None else int(row[0])

    def _change_row(self, change: Change) -> dict[str, Any]:
        return {
            "fleet": self.fleet,
            "at": change.at,
            "share": change.share or FLEET_KEY,
            "unit": change.unit,
            **dict(zip(NAMES, change.figures.values(), strict=True)),
        }

    def _start_row(self, start: JobStart) -> dict[str, Any]:
        return {
            "fleet": self.fleet,
            "at": start.at,
            "share": start.share,
            "job_id": start.job_id,
            "try_number": start.attempt,
            "attempt": start.attempt,
            "queued_since": start.queued_since,
            "demand": json.dumps(dict(start.demand), sort_keys=True),
        }

    @staticmethod
    def _start(row: Row[Any]) -> JobStart:
        return JobStart(
            at=int(row.at),
            share=row.share,
            job_id=row.job_id,
            demand={str(u): int(n) for u, n in json.loads(row.demand).items()},
            attempt=int(row.attempt),
            queued_since=int(row.queued_since),
        )


RECORDED = (
    "recorded by the pool manager at each cycle, each share with the config in force then; "
    "hours are hours of each unit's slots (gpu-h for gpu)"
)


STALE_MS = 60_000
"""A history known until this long before a window's end says so (a manager cycles every
few seconds)."""


class PoolsHistory:
    """:class:`~airflow_quota_provider.core.history_chart.HistorySource` of a pools fleet:
    what its manager recorded (:class:`HistoryStore`); "now" is this host's clock.

    :param clock: seconds since the epoch.
    """

    def __init__(self, store: Store, fleet: Fleet, clock: Callable[[], float] = time.time) -> None:
        self.history = HistoryStore(store, fleet.config.job_queue, create=False)
        self.fleet, self._clock = fleet, clock
        self.clock = "this host's clock"

    def now(self) -> int:
        return _millis(self._clock())

    def reading(self, window: Window) -> HistoryReading:
        history, notes = self.history.read(self.fleet, window.since, window.until), [RECORDED]
        if window.until - history.end > STALE_MS:
            notes.append(
                f"known until {_utc(history.end)}, the last cycle recorded: no manager "
                "has cycled since"
            )
        rows = self.history.store.preemptions_between(window.since, window.until)
        return HistoryReading(
            queue=self.fleet.config.job_queue,
            kind="fleet",
            config=self.fleet.config,
            history=history,
            window=window,
            reasons={(str(row.key), _millis(row.at.timestamp())): row.note for row in rows},
            notes=tuple(notes),
        )


def preemption_record(fleet: Fleet, row: PreemptionRow) -> PreemptionRecord:
    """A preemption as the history keeps it: the victim's share and unit by its pool (a
    pool the config no longer names stands for itself, of unit ``slot``), the work lost
    since its try started."""
    share, unit = fleet.shares.get(row.pool, (row.pool, "slot"))
    stopped = _millis(row.at.timestamp())
    started = stopped if row.started is None else _millis(row.started.timestamp())
    by = None if row.preemptor_pool is None else fleet.shares.get(row.preemptor_pool)
    return PreemptionRecord(
        at=stopped,
        kind=row.kind,
        share=share,
        job_id=str(row.key),
        demand={unit: row.slots},
        preemptor_share=None if by is None else by[0],
        preemptor=row.preemptor,
        seconds_lost=max(0, stopped - started) / 1000,
    )


_CHANGE_COLUMNS = (CHANGE.c.at, CHANGE.c.share, CHANGE.c.unit, *(CHANGE.c[n] for n in NAMES))
_BUCKET_COLUMNS = (
    BUCKET.c.start,
    BUCKET.c.end,
    BUCKET.c.share,
    BUCKET.c.unit,
    *(BUCKET.c[n] for n in NAMES),
)
"""The columns read, in this order: rows are taken apart by position (reading a month
of rows by name took a third of the read)."""


def _change(row: Row[Any]) -> Change:
    cells = tuple(row)
    return Change(int(cells[0]), cells[1] or None, cells[2], Figures(*map(int, cells[3:])))


def _bucket(row: Row[Any]) -> Bucket:
    cells = tuple(row)
    figures = Figures(*map(int, cells[4:]))
    return Bucket(int(cells[0]), int(cells[1]), cells[2] or None, cells[3], figures)


def _millis(seconds: float) -> int:
    return round(seconds * 1000)


def _utc(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
