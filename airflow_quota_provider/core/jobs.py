"""Jobs as the scheduling core sees them: waiting (RUNNABLE) or running.

Times are seconds on the caller's clock (wall, accelerated or virtual); the
core never reads a clock itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from airflow_quota_provider.core.model import Resources


def checkpointed(progress: float, interval: float | None) -> float:
    """Seconds of work a job that checkpoints every ``interval`` seconds of work has saved
    after ``progress`` seconds of it: the last whole interval (nothing without checkpoints)."""
    if not interval:
        return 0.0
    return math.floor(progress / interval) * interval


@dataclass(frozen=True, slots=True)
class WaitingJob:
    """A job waiting for capacity.

    :param submitted: when the job was first submitted; a preempted job keeps
        it, and so keeps its place in its share's queue.
    :param preemptions: how often the job has been preempted so far.
    :param preemption_retries: preemptions it survives; the next one fails it.
        ``None`` = requeued forever.
    :param checkpoint_interval: seconds of work between checkpoints, if known.
    :param preemptible: ``False`` for a job whose work cannot be stopped from
        outside: it is never chosen as a victim, and jobs waiting for its
        capacity say so.
    :param min_runtime_seconds: the job's own protection from reclaim, instead of
        its share's or the queue's ``min_runtime_seconds``.
    """

    id: str
    share: str
    demand: Resources
    priority: int = 0
    submitted: float = 0.0
    preemptions: int = 0
    preemption_retries: int | None = None
    checkpoint_interval: float | None = None
    preemptible: bool = True
    min_runtime_seconds: float | None = None

    @property
    def order_key(self) -> tuple[int, float, str]:
        """Dispatch order inside a share: higher priority, then earlier, then id."""
        return (-self.priority, self.submitted, self.id)

    def started(
        self, now: float, resumed_work: float = 0.0, *, borrowing: bool = False
    ) -> RunningJob:
        """The job as it runs once admitted at ``now``, resuming ``resumed_work`` seconds;
        ``borrowing`` if its admission borrowed any capacity."""
        return RunningJob(
            self.id,
            self.share,
            self.demand,
            self.priority,
            now,
            submitted=self.submitted,
            preemptions=self.preemptions,
            preemption_retries=self.preemption_retries,
            checkpoint_interval=self.checkpoint_interval,
            resumed_work=resumed_work,
            borrowing=borrowing,
            preemptible=self.preemptible,
            min_runtime_seconds=self.min_runtime_seconds,
        )


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job holding capacity (SCHEDULED, STARTING or RUNNING).

    :param started: when the current attempt started.
    :param resumed_work: seconds of work restored from a checkpoint at start.
    :param terminating: a preemption of this job is in progress; its capacity
        is still held until the caller reports it stopped.
    :param borrowing: its admission borrowed capacity; such jobs are reclaimed
        before jobs of their share that started within what it owned.
    :param preemptible: see :class:`WaitingJob`.
    :param min_runtime_seconds: see :class:`WaitingJob`.
    """

    id: str
    share: str
    demand: Resources
    priority: int
    started: float
    submitted: float = 0.0
    preemptions: int = 0
    preemption_retries: int | None = None
    checkpoint_interval: float | None = None
    resumed_work: float = 0.0
    terminating: bool = False
    borrowing: bool = False
    preemptible: bool = True
    min_runtime_seconds: float | None = None

    def progress(self, now: float) -> float:
        """Seconds of work done by ``now``: what it resumed from plus this attempt's run."""
        return self.resumed_work + max(0.0, now - self.started)

    def work_kept(self, now: float) -> float:
        """Seconds of work it resumes from if stopped at ``now``."""
        return checkpointed(self.progress(now), self.checkpoint_interval)

    def work_at_risk(self, now: float) -> float:
        """Instance-seconds of work lost if the job were stopped at ``now``."""
        lost = self.progress(now) - self.work_kept(now)
        return lost * sum(self.demand.values())

    def requeued(self) -> WaitingJob:
        """The job back in its queue after a preemption: its original place, one more
        preemption counted."""
        return WaitingJob(
            self.id,
            self.share,
            self.demand,
            self.priority,
            self.submitted,
            preemptions=self.preemptions + 1,
            preemption_retries=self.preemption_retries,
            checkpoint_interval=self.checkpoint_interval,
            preemptible=self.preemptible,
            min_runtime_seconds=self.min_runtime_seconds,
        )

    @property
    def retries_exhausted(self) -> bool:
        return self.preemption_retries is not None and self.preemptions >= self.preemption_retries
