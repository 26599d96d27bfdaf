"""Task instances of managed pools as the pool manager reads them from Airflow.

Pure data: the REST client fills it in, :mod:`~airflow_quota_provider.airflow_pools.decide`
reads it. Times are seconds since the epoch (UTC).

What each state means for capacity (Airflow 3.3):

==============================  =========================================
state                           for the quota shares
==============================  =========================================
``scheduled``                   waits for a pool slot: a job in its share's queue
``queued``, ``running``         holds its ``pool_slots`` (Airflow counts them)
``deferred``                    holds them too (the pools count deferred tasks)
``restarting``                  cleared while it ran: Airflow no longer counts it,
                                but its process may live ~10 s more, so its
                                capacity is held until it is gone
anything else                   holds nothing, waits for nothing
==============================  =========================================
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from airflow_quota_provider.core.task_key import TaskKey


class TaskState(str, enum.Enum):
    """The task instance states that matter to a pool."""

    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    DEFERRED = "deferred"
    RESTARTING = "restarting"
    OTHER = "other"

    @classmethod
    def of(cls, value: str | None) -> TaskState:
        try:
            return cls(value or "other")
        except ValueError:
            return cls.OTHER

    @property
    def holds(self) -> bool:
        """Its process (or trigger) may be using the capacity."""
        return self in _HOLDING

    @property
    def counted(self) -> bool:
        """Airflow counts it against its pool's slots (with ``include_deferred``)."""
        return self in _COUNTED


_COUNTED = frozenset({TaskState.QUEUED, TaskState.RUNNING, TaskState.DEFERRED})
_HOLDING = _COUNTED | {TaskState.RESTARTING}


@dataclass(frozen=True, slots=True)
class PoolTask:
    """A task instance in a managed pool.

    :param slots: its ``pool_slots``: how many of the pool's unit it needs.
    :param priority_weight: Airflow's effective priority weight (higher first).
    :param run_date: its run's logical date, or when the run was due if it has
        none; with ``priority_weight`` and the map index, the order in which
        Airflow's scheduler hands out a pool's slots.
    :param start_date: when its current try started, if it runs.
    """

    key: TaskKey
    pool: str
    slots: int
    priority_weight: int
    run_date: float
    state: TaskState
    start_date: float | None = None
    try_number: int = 0
    scheduled_at: float | None = None
    """When its current try was last scheduled (Airflow's ``scheduled_when``, where it
    says): the start of the try's wait for a slot."""
    preemption_retries: int | None = None
    """The task's own cap on preemptions (``executor_config["quota"]``), if it sets one."""
    preemptible: bool | None = None
    """``False`` if the task says it may not be preempted, ``None`` to follow its share."""
    min_runtime_seconds: float | None = None
    """The task's own protection from reclaim, if it sets one."""
    problem: str | None = None
    """Why the task's own settings could not be read; the manager fails it with this."""
    has_logical_date: bool = True
    """Whether its run has a logical date: Airflow's scheduler orders a pool's tasks of one
    priority by it, and those of runs without one (triggered without a date on Airflow 3)
    in no defined order; the manager orders them by when their run was due."""
