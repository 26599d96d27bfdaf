"""Which of our external jobs no task watches any more, and for how long.

A service job (AWS Batch) or a training job (SageMaker called directly) is
started by a task instance and carries its ``airflow:*`` tags. It is watched
while that task instance runs or is deferred (its process or its trigger
follows the job, and stops it when Airflow kills the task). It is an *orphan*
when no one watches it: the task instance is gone (deleted, its run deleted),
is in any other state (marked failed or success by hand, cleared, waiting for
a retry that will start its own job), or, for a job named after one try, has
moved on to a later try. An orphan keeps its instances and its bill until
someone stops it.

A job is stopped only once it has been an orphan for ``grace`` seconds: a task
between two states (queued again after its worker died, a retry about to
re-attach to its job) is not stopped under it. Since when is read from facts,
not remembered, so a reconciler run once (from cron) decides as one that loops:
the later of the job's creation and the task instance's last move (its latest
scheduled, queued, start or end time). A task instance that is gone counts from
the job's creation.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

WATCHING_STATES = frozenset({"running", "deferred"})
"""Task instance states in which the task follows its external job."""


@dataclass(frozen=True)
class ExternalJob(Generic[K]):
    """A job outside Airflow that one of our tasks started.

    :param kind: what it is, for messages (``service job``, ``training job``).
    :param job_id: what identifies it to stop it.
    :param task: the task instance its tags name.
    :param created: when it was created, in seconds since the epoch.
    :param try_number: the try it was started by, when its name says (a training
        job named per try); ``None`` when one job serves every try.
    """

    kind: str
    job_id: str
    task: K
    created: float
    try_number: int | None = None


@dataclass(frozen=True)
class TaskSeen:
    """A task instance as Airflow reports it now.

    :param moved: its latest scheduled, queued, start or end time (``None``: none set).
    """

    state: str | None
    try_number: int
    moved: float | None = None


@dataclass(frozen=True)
class Orphan(Generic[K]):
    """A job to stop, why, and since when no one has watched it."""

    job: ExternalJob[K]
    reason: str
    since: float


def why_orphaned(job: ExternalJob[K], seen: TaskSeen | None) -> str | None:
    """Why no one watches ``job``, or ``None`` while its task does."""
    if seen is None:
        return f"its task instance {job.task} no longer exists (deleted, or its run deleted)"
    if job.try_number is not None and seen.try_number > job.try_number:
        return (
            f"it was started by try {job.try_number} of {job.task}, which is at try "
            f"{seen.try_number} now"
        )
    if seen.state not in WATCHING_STATES:
        state = seen.state or "cleared (no state)"
        return f"its task instance {job.task} is {state}, so nothing follows the job"
    return None


def due_orphans(
    jobs: Iterable[ExternalJob[K]],
    tasks: Mapping[K, TaskSeen | None],
    now: float,
    grace: float,
) -> list[Orphan[K]]:
    """The ``jobs`` to stop now: orphans for ``grace`` seconds or more.

    ``tasks`` holds what Airflow reports for every job's task (``None``: gone).
    """
    if not grace >= 0:
        raise ValueError(f"grace must be 0 or more seconds, not {grace}")
    due: list[Orphan[K]] = []
    for job in jobs:
        seen = tasks.get(job.task)
        reason = why_orphaned(job, seen)
        if reason is None:
            continue
        since = max(job.created, seen.moved if seen and seen.moved is not None else job.created)
        if now - since >= grace:
            due.append(Orphan(job, reason, since))
    return due
