"""The fleet's heartbeat in Airflow: who manages it, on which database, how recently, with
which config, and its last error.

Kept in an Airflow Variable (``quota_pool_manager.<fleet>``), so it is seen by every
manager of the fleet whatever database each was given, by ``status``, ``explain`` and the
GPU Quotas page, and in Airflow's own Admin > Variables. The manager that acts writes it
after every cycle that changes it (a new config, an error gone), after every cycle that
failed, with what failed, and otherwise every :data:`HEARTBEAT_SECONDS`.

The rule it serves (one leader per fleet): a manager starts to act only if the heartbeat
names no other manager, or one on its own database (the database's lease decides between
those), or one that has not written it for :data:`STALE_AFTER_INTERVALS` of its periods
(:attr:`Heartbeat.period`: its interval, or :data:`HEARTBEAT_SECONDS` if longer).
Its limit: Airflow's API has no compare-and-set, so two managers on different databases
that start within the same moment both act until one reads the other's heartbeat at its
next check (once a period, right before it writes): the one that started later stands
down. A manager that stops writing (killed, cut off from Airflow) is shown as stale
after three of its periods (90 s with the defaults): its pools stay as it last set them,
and that is what ``status`` and the page then say.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Protocol

from airflow_quota_provider.airflow_pools.rest import GatewayError
from airflow_quota_provider.core.times import duration

STALE_AFTER_INTERVALS = 3
"""A heartbeat older than this many of its periods names no live manager."""

HEARTBEAT_SECONDS = 30.0
"""How often a manager whose cycles change nothing in its heartbeat writes it (and reads it
first, for another leader): a REST call every cycle would be most of a quiet cycle's."""


def variable_key(fleet: str) -> str:
    """The Airflow Variable that holds the heartbeat of ``fleet``."""
    return f"quota_pool_manager.{fleet}"


def config_digest(text: str) -> str:
    """A short digest of a config file's text: equal digests, same config."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Heartbeat:
    """What the manager acting for a fleet last said of itself."""

    manager: str
    """``host:pid:random``, as its lease names it."""
    database: str
    """The identity of the manager's database (its lease decides among managers on it)."""
    database_url: str
    """Where that database is, password hidden."""
    interval: float
    started_at: float
    cycled_at: float | None = None
    """When its last cycle ended well (seconds since 1970)."""
    config_path: str = ""
    config_digest: str = ""
    config_text: str = ""
    """The config it runs: what ``status`` shows tasks by when the file has changed since."""
    config_refused: str = ""
    """Why the file's newer config was refused, while it runs the older one."""
    error: str = ""
    """Its last cycle's failure, empty once a cycle ends well."""
    error_at: float | None = None
    written_at: float = field(default=0.0)
    beat_every: float = 0.0
    """Seconds between two writes while its cycles change nothing in it (0: every cycle)."""

    @property
    def period(self) -> float:
        """The longest a live manager leaves between two writes."""
        return max(self.interval, self.beat_every, 1.0)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Heartbeat:
        """Read a heartbeat; :class:`ValueError` if the text is not one."""
        try:
            data = json.loads(text)
            known = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in known})
        except (TypeError, ValueError) as error:
            raise ValueError(f"not a pool manager heartbeat: {error}") from None

    def stale(self, now: float) -> bool:
        """Whether its manager has written nothing for too long to count as running."""
        return now - self.written_at > STALE_AFTER_INTERVALS * self.period

    def describe(self, now: float) -> str:
        """``manager vm:1:ab on sqlite:///... (cycled 3 s ago)``."""
        cycled = (
            "never cycled"
            if self.cycled_at is None
            else f"cycled {duration(max(0.0, now - self.cycled_at))} ago"
        )
        return f"manager {self.manager} on {self.database_url} ({cycled})"


class VariableStore(Protocol):
    """Airflow Variables, as the gateway reaches them."""

    def variable(self, key: str) -> str | None: ...

    def set_variable(self, key: str, value: str, description: str) -> None: ...


class AnotherLeader(RuntimeError):
    """Another live manager, on another database, acts for the fleet."""

    def __init__(self, fleet: str, other: Heartbeat, now: float) -> None:
        super().__init__(
            f"{other.describe(now)} manages fleet {fleet}; a manager acts only where no other "
            "does: stop that one, or run this one with its --database so their lease decides"
        )
        self.other = other


class HeartbeatBoard:
    """The heartbeat of one fleet, read and written through Airflow's Variables."""

    def __init__(
        self,
        variables: VariableStore,
        fleet: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.variables = variables
        self.fleet = fleet
        self.key = variable_key(fleet)
        self.clock = clock

    def read(self) -> Heartbeat | None:
        """The fleet's heartbeat, ``None`` if no manager ever wrote one.

        :raises GatewayError: Airflow could not be read, or the Variable holds no heartbeat.
        """
        text = self.variables.variable(self.key)
        if text is None:
            return None
        try:
            return Heartbeat.from_json(text)
        except ValueError as error:
            raise GatewayError(f"read Variable {self.key}", str(error)) from None

    def write(self, beat: Heartbeat) -> Heartbeat:
        written = replace(beat, written_at=self.clock())
        description = f"heartbeat of the quota pool manager of fleet {self.fleet}; do not edit"
        self.variables.set_variable(self.key, written.to_json(), description)
        return written

    def check(self, me: Heartbeat) -> None:
        """:class:`AnotherLeader` if another live manager, on another database, started
        before this one (of two that act at once, the younger stands down)."""
        other = self.read()
        if other is None or other.manager == me.manager or other.database == me.database:
            return
        if other.stale(self.clock()):
            return
        if (other.started_at, other.manager) < (me.started_at, me.manager):
            raise AnotherLeader(self.fleet, other, self.clock())
