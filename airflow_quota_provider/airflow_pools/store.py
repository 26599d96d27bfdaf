"""The pool manager's own small database: preemptions, and each cycle's decisions.

SQLAlchemy Core, on 1.4 (Airflow 2.11 and 3.0 bring it) and 2; a SQLite file in
``$AIRFLOW_HOME`` by default, PostgreSQL by URL (several managers share one). Only the
manager creates the database and its tables; readers open it with ``create=False``.
Airflow stays the source of truth for tasks and pools: what is kept here is what
Airflow does not keep, so a restarted manager rebuilds the rest from Airflow:

- ``quota_preemption``: every preemption (who, by whom, why), so the cap on
  preemptions per task survives a restart and ``events`` can list them;
- ``quota_share_waiting``: what each share waits for: its first waiting task, that
  task's reason and since when (every task behind it waits for it), and how
  many wait;
- ``quota_cycle``: each cycle that started, preempted or failed a task, with
  how many REST calls it made;
- ``quota_refusal``: each change Airflow refused (a clear, a fail, a pool), with
  its answer, until a cycle applies all its decisions again: what ``status``, the
  page and ``explain`` show while the manager cannot apply its decisions.

It writes only what changed: a cycle that decides nothing and whose shares'
heads wait as before writes nothing (a manager cycling every few seconds over
thousands of waiting tasks would otherwise rewrite them all each time).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Dialect, Engine, Row
from sqlalchemy.sql import Select

from airflow_quota_provider.airflow_pools import default_database_url
from airflow_quota_provider.airflow_pools.database import (
    engine_for,
    existing_engine_for,
    sqlite_file,
)
from airflow_quota_provider.airflow_pools.decide import PoolPlan, Stop
from airflow_quota_provider.airflow_pools.schema import add_missing_columns, require_tables
from airflow_quota_provider.core.task_key import TaskKey

_IN_CHUNK = 500
"""Runs per ``IN (...)`` list when counting preemptions."""


class UtcDateTime(TypeDecorator[datetime]):
    """A moment in UTC, aware on the way out on every database (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"a naive datetime cannot be stored: {value!r}")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_METADATA = MetaData()


def _task_columns() -> list[Column[Any]]:
    return [
        Column("dag_id", String(250), nullable=False),
        Column("run_id", String(250), nullable=False),
        Column("task_id", String(250), nullable=False),
        Column("map_index", Integer, nullable=False, default=-1),
    ]


_PREEMPTION = Table(
    "quota_preemption",
    _METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    *_task_columns(),
    Column("at", UtcDateTime(), nullable=False),
    Column("pool", String(256), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("preemptor", Text, nullable=False),
    Column("fails", Boolean, nullable=False),
    Column("note", Text, nullable=False),
    Column("slots", Integer, nullable=False, default=0),
    Column("started", UtcDateTime(), nullable=True),
    Column("try_number", Integer, nullable=True),
    Column("released_at", UtcDateTime(), nullable=True),
    Column("preemptor_pool", String(256), nullable=True),
    Index("quota_preemption_task", "run_id", "dag_id", "task_id", "map_index"),
)

_WAITING = Table(
    "quota_share_waiting",
    _METADATA,
    *_task_columns(),
    Column("share", String(128), primary_key=True),
    Column("code", String(64), nullable=False),
    Column("message", Text, nullable=False),
    Column("since", UtcDateTime(), nullable=False),
    Column("waiting", Integer, nullable=False),
)

_CYCLE = Table(
    "quota_cycle",
    _METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UtcDateTime(), nullable=False),
    Column("started", Integer, nullable=False),
    Column("preempted", Integer, nullable=False),
    Column("refused", Integer, nullable=False),
    Column("waiting", Integer, nullable=False),
    Column("calls", Integer, nullable=False),
)

_REFUSAL = Table(
    "quota_refusal",
    _METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UtcDateTime(), nullable=False),
    Column("call", Text, nullable=False),
    Column("status", Integer, nullable=False),
    Column("answer", Text, nullable=False),
    Column("resolved_at", UtcDateTime(), nullable=True),
)


@dataclass(frozen=True)
class _TaskRecord:
    dag_id: str
    run_id: str
    task_id: str
    map_index: int

    @property
    def key(self) -> TaskKey:
        return TaskKey(self.dag_id, self.run_id, self.task_id, self.map_index)


@dataclass(frozen=True)
class PreemptionRow(_TaskRecord):
    """One preemption (``quota_preemption``)."""

    id: int
    at: datetime
    pool: str
    kind: str
    preemptor: str
    fails: bool
    note: str
    slots: int
    started: datetime | None
    """When the victim's try started: the work it lost (no checkpoint is known) is since."""
    try_number: int | None
    """The victim's try that was stopped: its external work is named after it."""
    released_at: datetime | None
    """When the victim's external work was seen gone (``None``: not seen yet, or not
    watched)."""
    preemptor_pool: str | None = None
    """The preemptor's pool (``None``: recorded by an earlier version of the manager)."""


@dataclass(frozen=True)
class WaitingRow(_TaskRecord):
    """A share's first waiting task and its reason (the task fields name the task)."""

    share: str
    code: str
    message: str
    since: datetime
    """When this task started to wait for this reason at the head of its share."""
    waiting: int
    """How many of the share's tasks wait (the head included)."""


@dataclass(frozen=True)
class CycleRow:
    """A cycle that started, preempted or refused a task (``quota_cycle``)."""

    id: int
    at: datetime
    started: int
    preempted: int
    refused: int
    waiting: int
    calls: int


@dataclass(frozen=True)
class RefusalRow:
    """A change Airflow refused (``quota_refusal``)."""

    id: int
    at: datetime
    call: str
    """The call in words, e.g. ``clear d/r/t``."""
    status: int
    """The HTTP status Airflow answered (4xx)."""
    answer: str
    """What Airflow said."""
    resolved_at: datetime | None
    """When a cycle next applied all its decisions (``None``: not yet)."""

    def message(self) -> str:
        return (
            f"the pool manager cannot apply its decisions: Airflow refused to {self.call} "
            f"at {self.at:%Y-%m-%d %H:%M:%S} UTC ({self.answer}); it undid that cycle's pool "
            "changes and tries again each cycle"
        )


class Store:
    """The manager's records in one database."""

    def __init__(self, url: str | None = None, *, create: bool = True) -> None:
        """The records in the database at ``url`` (default:
        :func:`~airflow_quota_provider.airflow_pools.default_database_url`).

        :param create: make the database, its tables and columns where missing, as the
            manager does at start. A reader (``status``, ``explain``, ``events``, the page)
            passes false and gets
            :class:`~airflow_quota_provider.airflow_pools.database.MissingDatabase`
            instead of an empty database that it would read as "nothing happened".

        :class:`~airflow_quota_provider.airflow_pools.database.DatabaseUrlError` if ``url``
        cannot be used (see
        :mod:`~airflow_quota_provider.airflow_pools.database`)."""
        url = url or default_database_url()
        if create:
            self.engine: Engine = engine_for(url)
            _make_folder(url)
            _METADATA.create_all(self.engine)
            add_missing_columns(self.engine, _METADATA)
        else:
            self.engine = existing_engine_for(url)
            require_tables(self.engine, _METADATA, url)

    def preemptions(self, keys: Iterable[TaskKey] | None = None) -> dict[TaskKey, int]:
        """How often each task was preempted (every task with a preemption, or ``keys``).

        For ``keys``, only the preemptions in their runs are read (an index serves it),
        not the whole history."""
        table = _PREEMPTION.c
        columns = (table.dag_id, table.run_id, table.task_id, table.map_index)
        wanted = None if keys is None else set(keys)
        query = select(*columns, func.count()).group_by(*columns)
        counts: dict[TaskKey, int] = {}
        with self.engine.connect() as connection:
            if wanted is None:
                rows = list(connection.execute(query))
            else:
                runs = sorted({key.run_id for key in wanted})
                rows = [
                    row
                    for chunk in range(0, len(runs), _IN_CHUNK)
                    for row in connection.execute(
                        query.where(table.run_id.in_(runs[chunk : chunk + _IN_CHUNK]))
                    )
                ]
        for row in rows:
            key = TaskKey(*row[:4])
            if wanted is None or key in wanted:
                counts[key] = int(row[4])
        return counts

    def record_preemption(self, stop: Stop, at: datetime) -> None:
        started = None if stop.started is None else datetime.fromtimestamp(stop.started, UTC)
        with self.engine.begin() as connection:
            connection.execute(
                insert(_PREEMPTION).values(
                    **_task(stop.key),
                    at=at,
                    pool=stop.pool,
                    kind=stop.kind.value,
                    preemptor=str(stop.preemptor),
                    fails=stop.fails,
                    note=stop.note,
                    slots=stop.slots,
                    started=started,
                    try_number=stop.try_number,
                    preemptor_pool=stop.preemptor_pool,
                )
            )

    def unreleased(self, since: datetime) -> list[PreemptionRow]:
        """Preemptions made after ``since`` whose victim's external work was not yet seen
        gone, oldest first."""
        table = _PREEMPTION.c
        query = (
            select(_PREEMPTION)
            .where(table.released_at.is_(None), table.at >= since)
            .order_by(table.id)
        )
        return self._read(query, PreemptionRow)

    def release(self, ids: Iterable[int], at: datetime) -> None:
        """Note that the external work of these preemptions' victims is gone."""
        wanted = list(ids)
        if not wanted:
            return
        with self.engine.begin() as connection:
            connection.execute(
                update(_PREEMPTION).where(_PREEMPTION.c.id.in_(wanted)).values(released_at=at)
            )

    def last_preemption(self, key: TaskKey) -> PreemptionRow | None:
        """The task's latest preemption, if it has one."""
        table = _PREEMPTION.c
        query = (
            select(_PREEMPTION)
            .where(
                table.run_id == key.run_id,
                table.dag_id == key.dag_id,
                table.task_id == key.task_id,
                table.map_index == key.map_index,
            )
            .order_by(table.id.desc())
            .limit(1)
        )
        found = self._read(query, PreemptionRow)
        return found[0] if found else None

    def events(self, limit: int = 100) -> list[PreemptionRow]:
        """The latest preemptions, newest first."""
        query = select(_PREEMPTION).order_by(_PREEMPTION.c.id.desc()).limit(limit)
        return self._read(query, PreemptionRow)

    def preemptions_between(self, since: int, until: int) -> list[PreemptionRow]:
        """The preemptions made in ``[since, until)`` (epoch ms), oldest first."""
        table = _PREEMPTION.c
        query = (
            select(_PREEMPTION)
            .where(table.at >= _moment(since), table.at < _moment(until))
            .order_by(table.at, table.id)
        )
        return self._read(query, PreemptionRow)

    def record_cycle(self, plan: PoolPlan, calls: int, at: datetime) -> None:
        """Keep what the cycle did, if anything, and what each share waits for where that
        changed (a head that waits as before keeps its ``since``)."""
        heads = {head.wait.share: head for head in plan.waiting.heads()}
        table = _WAITING.c
        with self.engine.begin() as connection:
            for row in _records(connection.execute(select(_WAITING)), WaitingRow):
                head = heads.get(row.share)
                if head is None or (row.key, row.code) != (head.key, head.wait.code.value):
                    connection.execute(delete(_WAITING).where(table.share == row.share))
                    continue
                del heads[row.share]
                if (row.message, row.waiting) != (head.wait.message, head.waiting):
                    connection.execute(
                        update(_WAITING)
                        .where(table.share == row.share)
                        .values(message=head.wait.message, waiting=head.waiting)
                    )
            if heads:
                connection.execute(
                    insert(_WAITING),
                    [
                        {
                            **_task(head.key),
                            "share": share,
                            "code": head.wait.code.value,
                            "message": head.wait.message,
                            "since": at,
                            "waiting": head.waiting,
                        }
                        for share, head in heads.items()
                    ],
                )
            if plan.start or plan.stop or plan.refuse:
                connection.execute(
                    insert(_CYCLE).values(
                        at=at,
                        started=len(plan.start),
                        preempted=len(plan.stop),
                        refused=len(plan.refuse),
                        waiting=len(plan.waiting),
                        calls=calls,
                    )
                )

    def record_refusal(self, call: str, status: int, answer: str, at: datetime) -> None:
        """Keep a change Airflow refused, until :meth:`resolve_refusals`."""
        with self.engine.begin() as connection:
            connection.execute(
                insert(_REFUSAL).values(at=at, call=call, status=status, answer=answer)
            )

    def resolve_refusals(self, at: datetime) -> None:
        """A cycle applied all its decisions: the refusals before are over."""
        table = _REFUSAL.c
        with self.engine.begin() as connection:
            connection.execute(
                update(_REFUSAL).where(table.resolved_at.is_(None)).values(resolved_at=at)
            )

    def refusal(self) -> RefusalRow | None:
        """The latest refusal not yet followed by a cycle that applied all its decisions."""
        table = _REFUSAL.c
        query = select(_REFUSAL).where(table.resolved_at.is_(None)).order_by(table.id.desc())
        found = self._read(query.limit(1), RefusalRow)
        return found[0] if found else None

    def refusals(self, limit: int = 100) -> list[RefusalRow]:
        """The latest refusals, newest first."""
        return self._read(select(_REFUSAL).order_by(_REFUSAL.c.id.desc()).limit(limit), RefusalRow)

    def waiting(self) -> list[WaitingRow]:
        """What each share waits for, by share."""
        return self._read(select(_WAITING).order_by(_WAITING.c.share), WaitingRow)

    def cycles(self, limit: int = 100) -> list[CycleRow]:
        query = select(_CYCLE).order_by(_CYCLE.c.id.desc()).limit(limit)
        return self._read(query, CycleRow)

    def _read(self, query: Select[Any], kind: type[_Record]) -> list[_Record]:
        with self.engine.connect() as connection:
            return _records(connection.execute(query), kind)


_Record = TypeVar("_Record", PreemptionRow, WaitingRow, CycleRow, RefusalRow)


def _records(rows: Iterable[Row[Any]], kind: type[_Record]) -> list[_Record]:
    return [kind(**row._asdict()) for row in rows]


def _make_folder(url: str) -> None:
    """The folder of a SQLite file, which SQLite does not make (``$AIRFLOW_HOME`` before
    Airflow first ran there)."""
    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def _moment(millis: int) -> datetime:
    return datetime.fromtimestamp(millis / 1000, UTC)


def now_utc() -> datetime:
    return datetime.now(UTC)


def _task(key: TaskKey) -> dict[str, object]:
    return {
        "dag_id": key.dag_id,
        "run_id": key.run_id,
        "task_id": key.task_id,
        "map_index": key.map_index,
    }
