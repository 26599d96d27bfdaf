"""The jobs of one queue, kept the way a scheduling cycle reads them.

A :class:`QueueState` is the snapshot the cycle schedules from: the config,
the running jobs with their usage per share and unit, and the waiting jobs of
each share in dispatch order. It is updated incrementally (Kueue keeps a cache
and snapshots it for the same reason), so a cycle costs what it decides, not
the length of the queues. :func:`~airflow_quota_provider.core.cycle.schedule`
only reads it; callers apply the decisions.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping

from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.model import QueueConfig

QueueEntry = tuple[int, float, str]
"""A waiting job's place in its share's queue: ``(-priority, submitted, job id)``."""


class QueueState:
    """Running and waiting jobs of one job queue under one config."""

    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        self._waiting: dict[str, WaitingJob] = {}
        self._queues: dict[str, list[QueueEntry]] = {}
        self._running: dict[str, RunningJob] = {}
        self._running_by_share: dict[str, dict[str, RunningJob]] = {}
        self._usage: dict[str, dict[str, int]] = {}
        self._terminating: dict[str, RunningJob] = {}

    @classmethod
    def from_jobs(
        cls,
        config: QueueConfig,
        running: Iterable[RunningJob] = (),
        waiting: Iterable[WaitingJob] = (),
    ) -> QueueState:
        state = cls(config)
        for running_job in running:
            state.add_running(running_job)
        by_share: dict[str, list[QueueEntry]] = {}
        known = state._waiting
        for job in waiting:
            if job.id in known or job.id in state._running:
                raise ValueError(f"job {job.id} appears twice")
            known[job.id] = job
            entry = (-job.priority, job.submitted, job.id)
            queue = by_share.get(job.share)
            if queue is None:
                by_share[job.share] = [entry]
            else:
                queue.append(entry)
        for share, entries in by_share.items():
            entries.sort()
            state._queues[share] = entries
        return state

    def copy(self) -> QueueState:
        """An independent copy (the jobs themselves are frozen and shared): a caller that
        keeps a state between instants settles a copy and keeps its own."""
        other = QueueState(self.config)
        other._waiting = dict(self._waiting)
        other._queues = {share: list(queue) for share, queue in self._queues.items()}
        other._running = dict(self._running)
        other._running_by_share = {
            share: dict(jobs) for share, jobs in self._running_by_share.items()
        }
        other._usage = {share: dict(usage) for share, usage in self._usage.items()}
        other._terminating = dict(self._terminating)
        return other

    # -- waiting jobs ---------------------------------------------------------

    def add_waiting(self, job: WaitingJob) -> None:
        if job.id in self._waiting or job.id in self._running:
            raise ValueError(f"job {job.id} is already known")
        self._waiting[job.id] = job
        bisect.insort(self._queues.setdefault(job.share, []), job.order_key)

    def remove_waiting(self, job_id: str) -> WaitingJob:
        job = self._waiting.pop(job_id)
        queue = self._queues[job.share]
        index = bisect.bisect_left(queue, job.order_key)
        del queue[index]
        return job

    def waiting_job(self, job_id: str) -> WaitingJob | None:
        return self._waiting.get(job_id)

    def queue(self, share: str) -> list[QueueEntry]:
        """A share's waiting jobs in dispatch order; do not mutate."""
        return self._queues.get(share, [])

    def queued_shares(self) -> Iterator[str]:
        return (share for share, queue in self._queues.items() if queue)

    @property
    def waiting_count(self) -> int:
        return len(self._waiting)

    def waiting(self) -> Iterator[WaitingJob]:
        return iter(self._waiting.values())

    # -- running jobs ---------------------------------------------------------

    def add_running(self, job: RunningJob) -> None:
        if job.id in self._running or job.id in self._waiting:
            raise ValueError(f"job {job.id} is already known")
        self._running[job.id] = job
        self._running_by_share.setdefault(job.share, {})[job.id] = job
        if job.terminating:
            self._terminating[job.id] = job
        usage = self._usage.setdefault(job.share, {})
        for unit, count in job.demand.items():
            usage[unit] = usage.get(unit, 0) + count

    def remove_running(self, job_id: str) -> RunningJob:
        job = self._running.pop(job_id)
        del self._running_by_share[job.share][job_id]
        self._terminating.pop(job_id, None)
        usage = self._usage[job.share]
        for unit, count in job.demand.items():
            usage[unit] -= count
        return job

    def replace_running(self, job: RunningJob) -> None:
        """Swap a running job's record (same id, share and demand), e.g. to mark it terminating."""
        old = self._running[job.id]
        if old.share != job.share or dict(old.demand) != dict(job.demand):
            raise ValueError(f"job {job.id}: share and demand of a running job cannot change")
        self._running[job.id] = job
        self._running_by_share[job.share][job.id] = job
        if job.terminating:
            self._terminating[job.id] = job
        else:
            self._terminating.pop(job.id, None)

    def running_job(self, job_id: str) -> RunningJob | None:
        return self._running.get(job_id)

    def running(self) -> Iterator[RunningJob]:
        return iter(self._running.values())

    def terminating(self) -> Iterable[RunningJob]:
        """Running jobs whose preemption is in progress."""
        return self._terminating.values()

    def running_of(self, share: str) -> Iterable[RunningJob]:
        return self._running_by_share.get(share, {}).values()

    @property
    def running_count(self) -> int:
        return len(self._running)

    def usage(self, share: str) -> Mapping[str, int]:
        """Instances per unit the share's running jobs hold."""
        return self._usage.get(share, {})

    def usage_by_share(self) -> Mapping[str, Mapping[str, int]]:
        return self._usage
