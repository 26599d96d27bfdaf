"""The pool manager's own small database: preemptions, and each cycle's decisions.

SQLAlchemy 2; a SQLite file by default, PostgreSQL by URL (several managers
share one). Airflow stays the source of truth for tasks and pools: what is
kept here is what Airflow does not keep, so a restarted manager rebuilds
the rest from Airflow:

- ``quota_preemption``: every preemption (who, by whom, why), so the cap on
  preemptions per task survives a restart and ``events`` can list them;
- ``quota_share_waiting``: what each share waits for: its first waiting task, that
  task's reason and since when (every task behind it waits for it), and how
  many wait;
- ``quota_cycle``: each cycle that started, preempted or failed a task, with
  how many REST calls it made.

It writes only what changed: a cycle that decides nothing and whose shares'
heads wait as before writes nothing (a manager cycling every few seconds over
thousands of waiting tasks would otherwise rewrite them all each time).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    create_engine,
    func,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from airflow_quota_provider.pool_manager import DEFAULT_DATABASE_URL
from airflow_quota_provider.pool_manager.decide import PoolPlan, Stop
from airflow_quota_provider.pool_manager.tasks import TaskKey

_IN_CHUNK = 500
"""Runs per ``IN (...)`` list when counting preemptions."""

DEFAULT_URL = DEFAULT_DATABASE_URL


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


class _Base(DeclarativeBase):
    pass


class _TaskColumns:
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    task_id: Mapped[str] = mapped_column(String(250))
    map_index: Mapped[int] = mapped_column(Integer, default=-1)

    @property
    def key(self) -> TaskKey:
        return TaskKey(self.dag_id, self.run_id, self.task_id, self.map_index)


class PreemptionRow(_TaskColumns, _Base):
    __tablename__ = "quota_preemption"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    pool: Mapped[str] = mapped_column(String(256))
    kind: Mapped[str] = mapped_column(String(32))
    preemptor: Mapped[str] = mapped_column(Text)
    fails: Mapped[bool] = mapped_column(Boolean)
    note: Mapped[str] = mapped_column(Text)
    slots: Mapped[int] = mapped_column(Integer, default=0)
    started: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    """When the victim's try started: the work it lost (no checkpoint is known) is since."""
    try_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The victim's try that was stopped: its external work is named after it."""
    released_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    """When the victim's external work was seen gone (``None``: not seen yet, or not
    watched)."""


Index(
    "quota_preemption_task",
    PreemptionRow.run_id,
    PreemptionRow.dag_id,
    PreemptionRow.task_id,
    PreemptionRow.map_index,
)


class WaitingRow(_TaskColumns, _Base):
    """A share's first waiting task and its reason (the task columns name the task)."""

    __tablename__ = "quota_share_waiting"

    share: Mapped[str] = mapped_column(String(128), primary_key=True)
    code: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)
    since: Mapped[datetime] = mapped_column(UtcDateTime())
    """When this task started to wait for this reason at the head of its share."""
    waiting: Mapped[int] = mapped_column(Integer)
    """How many of the share's tasks wait (the head included)."""


class CycleRow(_Base):
    __tablename__ = "quota_cycle"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    started: Mapped[int] = mapped_column(Integer)
    preempted: Mapped[int] = mapped_column(Integer)
    refused: Mapped[int] = mapped_column(Integer)
    waiting: Mapped[int] = mapped_column(Integer)
    calls: Mapped[int] = mapped_column(Integer)


class Store:
    """The manager's records in one database."""

    def __init__(self, url: str = DEFAULT_URL) -> None:
        self.engine: Engine = create_engine(url)
        _Base.metadata.create_all(self.engine)
        _add_missing_columns(self.engine)

    def preemptions(self, keys: Iterable[TaskKey] | None = None) -> dict[TaskKey, int]:
        """How often each task was preempted (every task with a preemption, or ``keys``).

        For ``keys``, only the preemptions in their runs are read (an index serves it),
        not the whole history."""
        columns = (
            PreemptionRow.dag_id,
            PreemptionRow.run_id,
            PreemptionRow.task_id,
            PreemptionRow.map_index,
        )
        wanted = None if keys is None else set(keys)
        query = select(*columns, func.count()).group_by(*columns)
        counts: dict[TaskKey, int] = {}
        with Session(self.engine) as session:
            if wanted is None:
                rows = list(session.execute(query))
            else:
                runs = sorted({key.run_id for key in wanted})
                rows = [
                    row
                    for chunk in range(0, len(runs), _IN_CHUNK)
                    for row in session.execute(
                        query.where(PreemptionRow.run_id.in_(runs[chunk : chunk + _IN_CHUNK]))
                    )
                ]
            for row in rows:
                key = TaskKey(*row[:4])
                if wanted is None or key in wanted:
                    counts[key] = int(row[4])
        return counts

    def record_preemption(self, stop: Stop, at: datetime) -> None:
        with Session(self.engine) as session, session.begin():
            session.add(
                PreemptionRow(
                    **_task(stop.key),
                    at=at,
                    pool=stop.pool,
                    kind=stop.kind.value,
                    preemptor=str(stop.preemptor),
                    fails=stop.fails,
                    note=stop.note,
                    slots=stop.slots,
                    started=None
                    if stop.started is None
                    else datetime.fromtimestamp(stop.started, UTC),
                    try_number=stop.try_number,
                )
            )

    def unreleased(self, since: datetime) -> list[PreemptionRow]:
        """Preemptions made after ``since`` whose victim's external work was not yet seen
        gone, oldest first."""
        query = (
            select(PreemptionRow)
            .where(PreemptionRow.released_at.is_(None), PreemptionRow.at >= since)
            .order_by(PreemptionRow.id)
        )
        with Session(self.engine) as session:
            return list(session.scalars(query))

    def release(self, ids: Iterable[int], at: datetime) -> None:
        """Note that the external work of these preemptions' victims is gone."""
        wanted = list(ids)
        if not wanted:
            return
        with Session(self.engine) as session, session.begin():
            session.execute(
                update(PreemptionRow).where(PreemptionRow.id.in_(wanted)).values(released_at=at)
            )

    def events(self, limit: int = 100) -> list[PreemptionRow]:
        """The latest preemptions, newest first."""
        query = select(PreemptionRow).order_by(PreemptionRow.id.desc()).limit(limit)
        with Session(self.engine) as session:
            return list(session.scalars(query))

    def record_cycle(self, plan: PoolPlan, calls: int, at: datetime) -> None:
        """Keep what the cycle did, if anything, and what each share waits for where that
        changed (a head that waits as before keeps its ``since``)."""
        heads = {head.wait.share: head for head in plan.waiting.heads()}
        with Session(self.engine) as session, session.begin():
            for row in session.scalars(select(WaitingRow)):
                head = heads.get(row.share)
                if head is None or (row.key, row.code) != (head.key, head.wait.code.value):
                    session.delete(row)
                    continue
                del heads[row.share]
                if (row.message, row.waiting) != (head.wait.message, head.waiting):
                    row.message, row.waiting = head.wait.message, head.waiting
            session.flush()
            session.add_all(
                WaitingRow(
                    **_task(head.key),
                    share=share,
                    code=head.wait.code.value,
                    message=head.wait.message,
                    since=at,
                    waiting=head.waiting,
                )
                for share, head in heads.items()
            )
            if plan.start or plan.stop or plan.refuse:
                session.add(
                    CycleRow(
                        at=at,
                        started=len(plan.start),
                        preempted=len(plan.stop),
                        refused=len(plan.refuse),
                        waiting=len(plan.waiting),
                        calls=calls,
                    )
                )

    def waiting(self) -> list[WaitingRow]:
        """What each share waits for, by share."""
        with Session(self.engine) as session:
            return list(session.scalars(select(WaitingRow).order_by(WaitingRow.share)))

    def cycles(self, limit: int = 100) -> list[CycleRow]:
        query = select(CycleRow).order_by(CycleRow.id.desc()).limit(limit)
        with Session(self.engine) as session:
            return list(session.scalars(query))


def _add_missing_columns(engine: Engine) -> None:
    """Add the nullable columns a table of an earlier version lacks (``create_all`` makes
    missing tables only), so an existing database keeps its records."""
    inspector = inspect(engine)
    for table in _Base.metadata.sorted_tables:
        have = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            if not column.nullable:
                raise RuntimeError(
                    f"table {table.name} of the pool manager's database lacks column "
                    f"{column.name}, which cannot be added in place; move the database aside"
                )
            kind = column.type.compile(dialect=engine.dialect)
            with engine.begin() as connection:
                connection.execute(
                    text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}')
                )


def now_utc() -> datetime:
    return datetime.now(UTC)


def _task(key: TaskKey) -> dict[str, object]:
    return {
        "dag_id": key.dag_id,
        "run_id": key.run_id,
        "task_id": key.task_id,
        "map_index": key.map_index,
    }
