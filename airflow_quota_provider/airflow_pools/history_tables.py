"""The tables of a pools fleet's usage history, in the pool manager's own database.

SQLAlchemy Core, on SQLite and PostgreSQL, SQLAlchemy 1.4 and 2, beside the tables of
:mod:`~airflow_quota_provider.airflow_pools.store` (the manager makes both when it
starts; a reader requires them). The rows are the records of
:mod:`~airflow_quota_provider.core.history`; times are epoch milliseconds, integrals
instance-milliseconds (``BigInteger``: an hour of 100 instances is 3.6e8). Every row
names its ``fleet`` (the config's ``job_queue``), so fleets may share a database as
their leases do.

- ``quota_history_change``: from ``at`` on, a share's (``""``: the fleet's own) figures
  of a unit; only changes are written;
- ``quota_history_bucket``: the integrals of a key over ``[start, end)``, what
  :func:`~airflow_quota_provider.core.retention.downsample` leaves of older changes;
- ``quota_history_start``: each try of a task that took its slots, with the wait
  before it, once per try (``(fleet, job_id, try_number)`` is unique);
- ``quota_history_mark``: until when the fleet's history is known (the last cycle that
  recorded it), and when it was last downsampled.

Preemptions are the rows of ``quota_preemption``, which the manager writes as it
clears or fails a victim (with the preemptor's pool since this version).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from airflow_quota_provider.core.history import NAMES

METADATA = MetaData()

FLEET_KEY = ""
"""The ``share`` column of the fleet's own figures (the core's share ``None``)."""


def _figures() -> list[Column[int]]:
    return [Column(name, BigInteger, nullable=False, default=0) for name in NAMES]


CHANGE = Table(
    "quota_history_change",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("fleet", String(128), nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("share", String(128), nullable=False),
    Column("unit", String(64), nullable=False),
    *_figures(),
    Index("quota_history_change_at", "fleet", "at"),
    Index("quota_history_change_key", "fleet", "share", "unit", "at"),
)

BUCKET = Table(
    "quota_history_bucket",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("fleet", String(128), nullable=False),
    Column("start", BigInteger, nullable=False),
    Column("end", BigInteger, nullable=False),
    Column("share", String(128), nullable=False),
    Column("unit", String(64), nullable=False),
    *_figures(),
    Index("quota_history_bucket_end", "fleet", "end"),
)

START = Table(
    "quota_history_start",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("fleet", String(128), nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("share", String(128), nullable=False),
    Column("job_id", Text, nullable=False),
    Column("try_number", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("queued_since", BigInteger, nullable=False),
    Column("demand", Text, nullable=False, comment="JSON: instances per unit"),
    UniqueConstraint("fleet", "job_id", "try_number", name="quota_history_start_try"),
    Index("quota_history_start_at", "fleet", "at"),
)

MARK = Table(
    "quota_history_mark",
    METADATA,
    Column("fleet", String(128), primary_key=True),
    Column("recorded_until", BigInteger, nullable=False),
    Column("downsampled_at", BigInteger, nullable=True),
)
