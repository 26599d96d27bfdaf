"""The reconciler's pass: list our live jobs, read their tasks, stop the orphans.

Each pass lists the jobs of every source, reads each named task instance once
through Airflow's REST API, and stops the jobs no task has watched for the
grace period, each with a log line saying why and a count
(``quota_provider.<fleet>.orphans_stopped``). When a source or Airflow cannot
be read, the pass stops there and stops nothing: a task that cannot be seen is
not taken for gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from airflow_quota_provider import metrics
from airflow_quota_provider.core.orphans import Orphan, TaskSeen, due_orphans, why_orphaned
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.reconciler.sources import JobSource

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 300.0


class TaskStates(Protocol):
    """What the reconciler needs of Airflow (the pool manager's gateway has it)."""

    def task_state(self, key: TaskKey) -> TaskSeen | None:
        """A task instance's state, try and last move; ``None`` if it does not exist."""


@dataclass(frozen=True)
class Stopped:
    """One orphan the pass stopped."""

    orphan: Orphan[TaskKey]
    source: JobSource


class Reconciler:
    """Stops our jobs that no task watches any more.

    :param sources: where our jobs are (AWS Batch job queues, SageMaker).
    :param airflow: reads task instances (an :class:`~airflow_quota_provider.airflow_pools.
        gateway.AirflowGateway`).
    :param fleet: the name counts and logs use (the job queue or the pools fleet).
    :param grace: seconds a job must have been an orphan before it is stopped.
    """

    def __init__(
        self,
        sources: Iterable[JobSource],
        airflow: TaskStates,
        fleet: str,
        grace: float = DEFAULT_GRACE_SECONDS,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sources = tuple(sources)
        self.airflow = airflow
        self.fleet = fleet
        if not grace >= 0:
            raise ValueError(f"grace must be 0 or more seconds, not {grace}")
        self.grace = grace
        self.clock = clock
        self.waiting = 0
        """Orphans of the last pass still within their grace period."""

    def reconcile(self) -> list[Stopped]:
        """One pass; the orphans it stopped.

        :raises JobsUnknown: a source could not be listed or a job stopped.
        :raises GatewayError: Airflow could not be read.
        """
        listed = [(job, source) for source in self.sources for job in source.live()]
        seen: dict[TaskKey, TaskSeen | None] = {}
        for job, _ in listed:
            if job.task not in seen:
                seen[job.task] = self.airflow.task_state(job.task)
        now = self.clock()
        jobs = [job for job, _ in listed]
        due = {orphan.job: orphan for orphan in due_orphans(jobs, seen, now, self.grace)}
        self.waiting = sum(why_orphaned(job, seen.get(job.task)) is not None for job in jobs)
        self.waiting -= len(due)
        stopped: list[Stopped] = []
        for job, source in listed:
            orphan = due.get(job)
            if orphan is None:
                continue
            reason = f"Stopped by airflow-quota: {orphan.reason} (for {now - orphan.since:.0f} s)"
            log.warning("stopping orphaned %s %s: %s", job.kind, job.job_id, reason)
            source.stop(job, reason)
            stopped.append(Stopped(orphan, source))
        metrics.count_orphans(self.fleet, len(stopped))
        return stopped
