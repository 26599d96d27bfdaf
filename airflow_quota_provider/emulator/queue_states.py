"""Each queue's running and waiting jobs as the core holds them, recorded job by job for saving.

A :class:`~airflow_quota_provider.core.QueueState` changes only through its
five mutators (add or remove a waiting job, add, remove or replace a running
one), which the core's settle loop and the dispatcher call. The queue states
the emulator keeps also record, at each of those calls, where the job now
is in a :class:`~.tables.Table` of placements by job id, so a save writes
the jobs that moved rather than every queue's whole line. A placement
carries the order it was made in: a restored queue holds its jobs in the
order it held them before, which the core's tie-breaks may depend on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from airflow_quota_provider.core import QueueConfig, QueueState, RunningJob, WaitingJob
from airflow_quota_provider.emulator.tables import Table


@dataclass(frozen=True, slots=True)
class Placement:
    """A job a queue holds, running or waiting."""

    queue_arn: str
    order: int
    """Placements of one queue, oldest first, are its jobs in the order it holds them."""
    job: RunningJob | WaitingJob


class RecordedQueueState(QueueState):
    """A queue's state that records each job it holds in ``placements``."""

    def __init__(self, config: QueueConfig, queue_arn: str, placements: Table[Placement]) -> None:
        super().__init__(config)
        self.queue_arn = queue_arn
        self._placements = placements
        self._placed = 0

    def restore(self, placed: Iterable[Placement]) -> None:
        """Hold these jobs again, in their order, with the placements saved."""
        for placement in sorted(placed, key=lambda p: p.order):
            if isinstance(placement.job, RunningJob):
                super().add_running(placement.job)
            else:
                super().add_waiting(placement.job)
            self._placements[placement.job.id] = placement
            self._placed = placement.order

    def forget(self) -> None:
        """The queue is gone: so are the placements of its jobs."""
        held = [job.id for job in self.running()] + [job.id for job in self.waiting()]
        for job_id in held:
            del self._placements[job_id]

    def add_waiting(self, job: WaitingJob) -> None:
        super().add_waiting(job)
        self._place(job)

    def remove_waiting(self, job_id: str) -> WaitingJob:
        job = super().remove_waiting(job_id)
        del self._placements[job_id]
        return job

    def add_running(self, job: RunningJob) -> None:
        super().add_running(job)
        self._place(job)

    def remove_running(self, job_id: str) -> RunningJob:
        job = super().remove_running(job_id)
        del self._placements[job_id]
        return job

    def replace_running(self, job: RunningJob) -> None:
        super().replace_running(job)
        # The core keeps a replaced job's place; so does its placement.
        self._placements[job.id] = replace(self._placements[job.id], job=job)

    def _place(self, job: RunningJob | WaitingJob) -> None:
        self._placed += 1
        self._placements[job.id] = Placement(self.queue_arn, self._placed, job)
