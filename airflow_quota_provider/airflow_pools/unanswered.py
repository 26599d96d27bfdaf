"""A clear or fail that was sent but not answered, and whether Airflow carried it out.

A request can reach the api-server and be carried out while its answer never comes
back in the time the manager gave it (an api-server slow under load, a connection cut
after the request). The manager cannot tell from the error, so it asks after the task
on its next cycle: one carried out is recorded then, as if it had been answered (its
preemption, its note, its counts); one not carried out is forgotten, and the cycle
decides again from what runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.tasks import TaskState
from airflow_quota_provider.core.orphans import TaskSeen

_CLEARED = frozenset({TaskState.RESTARTING, TaskState.SCHEDULED, TaskState.QUEUED})
"""What a cleared task becomes before its next try runs (or ``None``, read as OTHER)."""


@dataclass(frozen=True)
class Unanswered:
    """``stop`` sent at ``at`` (seconds since the epoch) with no answer.

    :param deferred: the victim was deferred when the cycle read it.
    """

    stop: Stop
    at: float
    deferred: bool


def carried_out(stop: Stop, seen: TaskSeen | None) -> bool:
    """Whether the task as Airflow shows it now (``None``: gone) shows ``stop`` was done.

    A later try than the one stopped, or, for the same try, the state the change leaves
    (failed for a fail; restarting, no state or scheduled again for a clear). A try that
    still runs, or that ended on its own before a clear, shows it was not."""
    if seen is None:
        return False
    if stop.try_number and seen.try_number > stop.try_number:
        return True
    if stop.fails:
        return seen.state == "failed"
    return seen.state in (None, "none", "up_for_retry") or TaskState.of(seen.state) in _CLEARED
