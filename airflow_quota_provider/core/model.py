"""The quota model: a job queue's capacity and the quota shares that own it.

The meaning is AWS Batch's (quota management for SageMaker Training jobs):

- the queue has a capacity per *unit* (an instance type such as
  ``ml.p4d.24xlarge``), counted in instances;
- each share owns a capacity per unit: what it may use without borrowing;
- ``RESERVE`` keeps its idle capacity for itself, ``LEND`` lends it and never
  borrows, ``LEND_AND_BORROW`` lends and borrows up to
  ``capacity x (1 + borrow_limit / 100)`` of every unit (``-1`` = unlimited);
- capacity no share owns is lent to borrowers like idle lent capacity.

Objects here are frozen: a config change is a new object.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

Resources = Mapping[str, int]
"""Instances per unit, e.g. ``{"ml.p4d.24xlarge": 2}``."""

UNLIMITED_BORROW = -1
MIN_PRIORITY = 0
MAX_PRIORITY = 9999
MAX_SHARES_PER_QUEUE = 20
MAX_UNITS_PER_SHARE = 5
MIN_AWS_INTEGER, MAX_AWS_INTEGER = -(2**31), 2**31 - 1
"""The range of an AWS ``Integer`` (capacities, borrow limits, priorities): 32 bits."""


class Sharing(str, enum.Enum):
    """A share's resource-sharing strategy (``resourceSharingConfiguration.strategy``)."""

    RESERVE = "RESERVE"
    LEND = "LEND"
    LEND_AND_BORROW = "LEND_AND_BORROW"

    @property
    def lends(self) -> bool:
        return self is not Sharing.RESERVE

    @property
    def borrows(self) -> bool:
        return self is Sharing.LEND_AND_BORROW


class ShareState(str, enum.Enum):
    ENABLED = "ENABLED"
    DISABLED = "DISABLED"


class IdleAssignment(str, enum.Enum):
    """How idle capacity is handed to borrowing shares.

    ``FIFO`` is AWS's only strategy: borrowers in submission order.
    ``FAIR`` (an extension) hands it to the borrowing share with the least
    borrowed capacity per unit of weight first.
    """

    FIFO = "FIFO"
    FAIR = "FAIR"


class VictimOrder(str, enum.Enum):
    """How preemption candidates of equal rank are ordered.

    ``most_recent`` (the default, Kueue's rule) takes the most recently started
    job first; ``least_work_lost`` (an extension) takes the job that loses the
    fewest instance-seconds of work since its last checkpoint first.
    """

    MOST_RECENT = "most_recent"
    LEAST_WORK_LOST = "least_work_lost"


class Backend(str, enum.Enum):
    """Who schedules a config's shares.

    ``aws_batch``: AWS Batch (the provider submits, watches, explains and syncs
    the config); ``airflow_pools``: the pool manager, through Airflow pools.
    """

    AWS_BATCH = "aws_batch"
    AIRFLOW_POOLS = "airflow_pools"


@dataclass(frozen=True)
class Share:
    """One quota share of a job queue."""

    name: str
    capacity: Resources
    sharing: Sharing = Sharing.LEND_AND_BORROW
    borrow_limit: int = UNLIMITED_BORROW
    in_share_preemption: bool = False
    state: ShareState = ShareState.ENABLED
    weight: float = 1.0
    min_runtime_seconds: float | None = None
    preemption_retries: int | None = None
    """With ``airflow_pools``: preemptions a task of this share survives; the next one
    fails it (``None``: no cap). AWS Batch sets this per job instead."""
    preemptible: bool = True
    """With ``airflow_pools``: ``False`` when the share's tasks cannot stop their external
    work, so they are never preempted (a task may say otherwise for itself)."""

    @property
    def enabled(self) -> bool:
        return self.state is ShareState.ENABLED

    def owns(self, unit: str) -> int:
        return self.capacity.get(unit, 0)

    def limit(self, unit: str, queue_capacity: int) -> int:
        """The most of ``unit`` this share may ever hold, borrowing included."""
        if not self.sharing.borrows:
            return self.owns(unit)
        cap = self.borrow_cap(unit)
        return queue_capacity if cap is None else min(queue_capacity, cap)

    def borrow_cap(self, unit: str) -> int | None:
        """The most of ``unit`` its sharing strategy and borrow limit let it hold, however
        much the queue has: ``None`` when it may borrow without limit."""
        own = self.owns(unit)
        if not self.sharing.borrows:
            return own
        if self.borrow_limit == UNLIMITED_BORROW:
            return None
        return own + own * self.borrow_limit // 100


@dataclass(frozen=True)
class QueueConfig:
    """A job queue with quota shares, as one config file describes it."""

    job_queue: str
    capacity: Resources
    shares: tuple[Share, ...]
    idle_assignment: IdleAssignment = IdleAssignment.FIFO
    min_runtime_seconds: float | None = None
    victim_order: VictimOrder = VictimOrder.MOST_RECENT
    backend: Backend = Backend.AWS_BATCH
    pools: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """With ``airflow_pools``: the Airflow pool of a share's unit, ``pools[share][unit]``,
    where the config names one (others get the default name)."""
    history_days: float | None = None
    """With ``airflow_pools``: how many days the pool manager keeps the fleet's usage
    history (``None``: its default, 400, or its ``--history-days``)."""
    _by_name: dict[str, Share] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {s.name: s for s in self.shares})

    def share(self, name: str) -> Share | None:
        return self._by_name.get(name)

    @property
    def title(self) -> str:
        """How messages name it: ``job queue NAME`` (AWS Batch) or ``fleet NAME`` (pools)."""
        noun = "fleet" if self.backend is Backend.AIRFLOW_POOLS else "job queue"
        return f"{noun} {self.job_queue}"

    @property
    def units(self) -> tuple[str, ...]:
        return tuple(sorted(self.capacity))

    def unowned(self, unit: str) -> int:
        """Capacity of ``unit`` that no share owns (lent to borrowers)."""
        return self.capacity.get(unit, 0) - sum(s.owns(unit) for s in self.shares)

    def share_limit(self, share: Share, unit: str) -> int:
        return share.limit(unit, self.capacity.get(unit, 0))

    def min_runtime_for(self, share: Share) -> float | None:
        """A share's protection from reclaim; the share's setting wins over the queue's."""
        if share.min_runtime_seconds is not None:
            return share.min_runtime_seconds
        return self.min_runtime_seconds

    def with_share(self, share: Share) -> QueueConfig:
        """This config with one share replaced (or added)."""
        shares = [share if s.name == share.name else s for s in self.shares]
        if share.name not in self._by_name:
            shares.append(share)
        return replace(self, shares=tuple(shares))
