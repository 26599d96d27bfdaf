"""Which of several pool managers of one fleet acts: a lease in their shared database.

Any number of managers may run for a fleet on one PostgreSQL database; exactly
one acts at a time. The one that acts holds the fleet's row of
``quota_manager_lease`` until ``expires_at``, a moment on the *database's* clock
(managers on different hosts need no synchronized clocks). A thread renews it
every quarter of the lease; the others try to take it at the same pace, and
succeed only once it has expired (one ``UPDATE ... WHERE holder = me OR
expires_at < now``, which PostgreSQL serializes on the row). Each take-over
increments ``epoch``, which the manager logs with what it does.

Why no one acts beside another (fencing by time): a renewal sent at the holder's
monotonic moment ``m`` reaches the database no earlier, so the lease it grants
ends no earlier than ``m + seconds`` on any clock that runs at the same rate.
The holder therefore starts a write (a pool change, a clear) only while at least
a quarter lease is left before ``m + seconds``, and gives each write the time left
until then (:meth:`Lease.time_left`: three quarters of the lease to all of it, as
renewals come every quarter); so it has stopped acting before the lease can pass to
anyone. A holder that cannot renew (its database connection cut, the database
gone) stops acting on the same deadline, before a successor can start. What
time cannot fence is a request that an api-server receives in time but
carries out after the deadline: Airflow's API has no fencing token.

Why not a PostgreSQL advisory lock: it is released only when the database sees
the session end, which for a host that vanished (no TCP reset) takes as long as
TCP keepalives allow, minutes to hours by default; a lease bounds take-over by
its length.

On SQLite (one file, one host) several managers make no sense: the command refuses
to start a manager that finds the lease held by another that keeps renewing it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    insert,
    literal_column,
    select,
    text,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

log = logging.getLogger(__name__)

RENEWALS_PER_LEASE = 4
"""How often per lease the holder renews it (and the others try to take it)."""

_metadata = MetaData()
lease_table = Table(
    "quota_manager_lease",
    _metadata,
    Column("fleet", String(256), primary_key=True),
    Column("holder", String(256), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("expires_at", Float, nullable=False, comment="seconds since 1970, database clock"),
)


database_table = Table(
    "quota_manager_database",
    _metadata,
    Column("row", Integer, primary_key=True),
    Column("identity", String(64), nullable=False),
)
"""One row: the database's own identity, which two URLs to one database share (and one
relative SQLite path from two folders does not)."""


def database_identity(engine: Engine) -> str:
    """The identity of the managers' database, made on first use."""
    _metadata.create_all(engine)
    query = select(database_table.c.identity).where(database_table.c.row == 1)
    with engine.begin() as connection:
        found = connection.execute(query).scalar()
    if found is not None:
        return str(found)
    try:
        with engine.begin() as connection:
            made = uuid.uuid4().hex
            connection.execute(insert(database_table).values(row=1, identity=made))
            return made
    except IntegrityError:  # another manager made it meanwhile
        with engine.begin() as connection:
            return str(connection.execute(query).scalar_one())


@dataclass(frozen=True)
class Holder:
    """Who holds a lease now."""

    holder: str
    epoch: int
    seconds_left: float


def holder_name() -> str:
    """``host:pid:random``: readable in logs, unique among restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Lease:
    """This manager's claim to act for ``fleet``.

    :param engine: the managers' shared database.
    :param fleet: what the lease is for (the fleet's name); managers of other
        fleets on the same database hold their own.
    :param seconds: how long a renewal lasts; a dead holder is replaced within
        about ``seconds * 1.25``.
    :param monotonic: the clock the deadline is kept on.
    """

    def __init__(
        self,
        engine: Engine,
        fleet: str,
        seconds: float,
        *,
        holder: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not seconds > 0:
            raise ValueError(f"a lease lasts more than 0 seconds, not {seconds}")
        self.engine = engine
        self.fleet = fleet
        self.seconds = seconds
        self.holder = holder or holder_name()
        self.monotonic = monotonic
        self.epoch = 0
        self._deadline = float("-inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        _metadata.create_all(engine)

    @property
    def renew_every(self) -> float:
        """How often the lease is renewed (and taken, by another): a quarter of it. Also the
        least time left that a write may start with."""
        return self.seconds / RENEWALS_PER_LEASE

    # -- the holder's side ---------------------------------------------------------------

    def leading(self) -> bool:
        """Whether this manager may start a write now (see the module's fencing rule)."""
        return self.time_left() > self.renew_every

    def time_left(self) -> float:
        """The seconds until this manager must have stopped acting: what a write it starts
        now may take at most. 0 when it does not lead."""
        with self._lock:
            return max(0.0, self._deadline - self.monotonic())

    def try_acquire(self) -> bool:
        """Take or renew the lease once; ``False`` if another holds it or the database fails.

        A failure leaves the deadline of the last renewal in force, which runs out on its own.
        """
        sent = self.monotonic()
        try:
            with self.engine.begin() as connection:
                epoch = self._claim(connection)
        except SQLAlchemyError as error:
            log.warning("cannot renew the lease of fleet %s (%s)", self.fleet, _first_line(error))
            return False
        with self._lock:
            if epoch is None:
                if self._deadline > float("-inf"):
                    log.warning("lost the lease of fleet %s to another manager", self.fleet)
                self._deadline = float("-inf")
                return False
            if epoch != self.epoch:
                log.info("leading fleet %s as %s (epoch %d)", self.fleet, self.holder, epoch)
            self.epoch = epoch
            self._deadline = sent + self.seconds
        return True

    def start(self) -> None:
        """Renew (or try to take) the lease every quarter lease until :meth:`stop`."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="quota-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and hand the lease back at once, so another can take over now."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            held, self._deadline = self._deadline > float("-inf"), float("-inf")
        if not held:
            return
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    lease_table.update()
                    .where(lease_table.c.fleet == self.fleet, lease_table.c.holder == self.holder)
                    .values(expires_at=0.0)
                )
        except SQLAlchemyError as error:
            log.warning("cannot hand back the lease of fleet %s (%s)", self.fleet, error)

    def wait_to_lead(self, patience: float | None = None) -> bool:
        """Take the lease, waiting up to ``patience`` (default 1.5 leases) for a dead
        holder's to expire; ``False`` if another manager keeps renewing it."""
        deadline = self.monotonic() + (self.seconds * 1.5 if patience is None else patience)
        while not self.try_acquire():
            if self.monotonic() >= deadline:
                return False
            time.sleep(self.renew_every)
        return True

    # -- anyone's view -------------------------------------------------------------------

    def current(self) -> Holder | None:
        """Who holds the lease now, if anyone."""
        now = _database_now(self.engine.dialect.name)
        table = lease_table
        left = table.c.expires_at - literal_column(now)
        query = select(table.c.holder, table.c.epoch, left).where(table.c.fleet == self.fleet)
        with self.engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None or row[2] <= 0:
            return None
        return Holder(str(row[0]), int(row[1]), float(row[2]))

    # -- inside ----------------------------------------------------------------------------

    def _claim(self, connection: Connection) -> int | None:
        """Renew our lease or take an expired one in one statement; the epoch, or ``None``."""
        now = _database_now(connection.dialect.name)
        table = lease_table
        # a first manager makes the row, already expired, so the update below takes it
        exists = connection.execute(
            select(table.c.epoch).where(table.c.fleet == self.fleet)
        ).first()
        if exists is None:
            try:
                with connection.begin_nested():
                    connection.execute(
                        insert(table).values(fleet=self.fleet, holder="", epoch=0, expires_at=0.0)
                    )
            except IntegrityError:
                pass  # another manager made it in between
        taken = connection.execute(
            text(
                f"UPDATE quota_manager_lease SET "
                f"epoch = CASE WHEN holder = :me THEN epoch ELSE epoch + 1 END, "
                f"holder = :me, expires_at = {now} + :seconds "
                f"WHERE fleet = :fleet AND (holder = :me OR expires_at < {now})"
            ),
            {"me": self.holder, "seconds": self.seconds, "fleet": self.fleet},
        )
        if taken.rowcount != 1:
            return None
        epoch = connection.execute(
            select(table.c.epoch).where(table.c.fleet == self.fleet)
        ).scalar_one()
        return int(epoch)

    def _renew(self) -> None:
        while not self._stop.is_set():
            self.try_acquire()
            self._stop.wait(self.renew_every)


def _database_now(dialect: str) -> str:
    """The database's clock in seconds since the epoch, as SQL."""
    if dialect == "postgresql":
        return "extract(epoch from clock_timestamp())"
    if dialect == "sqlite":
        return "((julianday('now') - 2440587.5) * 86400.0)"
    raise ValueError(f"the pool manager's lease needs PostgreSQL or SQLite, not {dialect}")


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
