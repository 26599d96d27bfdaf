"""The pool manager's own small database: preemptions, and each cycle's decisions.

SQLAlchemy 2; a SQLite file by default, PostgreSQL by URL (several managers
share one). Airflow stays the source of truth for tasks and pools: what is
kept here is what Airflow does not keep, so a restarted manager rebuilds
the rest from Airflow:

- ``quota_preemption``: every preemption (who, by whom, why), so the cap on
  preemptions per task survives a restart and ``events`` can list them;
- ``quota_waiting``: why each task waits, as of the last cycle, for ``status``
  and ``explain`` without asking the manager;
- ``quota_cycle``: when each cycle ran, what it did and how many REST calls it
  made.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Integer,
    String,
    Text,
    TypeDecorator,
    create_engine,
    delete,
    func,
    select,
)
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from airflow_quota_provider.pool_manager import DEFAULT_DATABASE_URL
from airflow_quota_provider.pool_manager.decide import PoolPlan, Stop
from airflow_quota_provider.pool_manager.tasks import TaskKey

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


class WaitingRow(_TaskColumns, _Base):
    __tablename__ = "quota_waiting"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    position: Mapped[int] = mapped_column(Integer)
    share: Mapped[str] = mapped_column(String(128))
    code: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)


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

    def preemptions(self, keys: Iterable[TaskKey] | None = None) -> dict[TaskKey, int]:
        """How often each task was preempted (every task with a preemption, or ``keys``)."""
        query = select(
            PreemptionRow.dag_id,
            PreemptionRow.run_id,
            PreemptionRow.task_id,
            PreemptionRow.map_index,
            func.count(),
        ).group_by(
            PreemptionRow.dag_id,
            PreemptionRow.run_id,
            PreemptionRow.task_id,
            PreemptionRow.map_index,
        )
        with Session(self.engine) as session:
            counts = {TaskKey(*row[:4]): int(row[4]) for row in session.execute(query)}
        if keys is None:
            return counts
        return {key: counts[key] for key in keys if key in counts}

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
                )
            )

    def events(self, limit: int = 100) -> list[PreemptionRow]:
        """The latest preemptions, newest first."""
        query = select(PreemptionRow).order_by(PreemptionRow.id.desc()).limit(limit)
        with Session(self.engine) as session:
            return list(session.scalars(query))

    def record_cycle(self, plan: PoolPlan, calls: int, at: datetime) -> None:
        """Keep the cycle's figures and replace the waiting reasons with its own."""
        with Session(self.engine) as session, session.begin():
            session.execute(delete(WaitingRow))
            session.add_all(
                WaitingRow(
                    **_task(key),
                    position=position,
                    share=wait.share,
                    code=wait.code.value,
                    message=wait.message,
                )
                for position, (key, wait) in enumerate(plan.waiting.items())
            )
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
        with Session(self.engine) as session:
            return list(session.scalars(select(WaitingRow).order_by(WaitingRow.position)))

    def cycles(self, limit: int = 100) -> list[CycleRow]:
        query = select(CycleRow).order_by(CycleRow.id.desc()).limit(limit)
        with Session(self.engine) as session:
            return list(session.scalars(query))


def now_utc() -> datetime:
    return datetime.now(UTC)


def _task(key: TaskKey) -> dict[str, object]:
    return {
        "dag_id": key.dag_id,
        "run_id": key.run_id,
        "task_id": key.task_id,
        "map_index": key.map_index,
    }
