"""The life of an emulated SageMaker training job, in emulated time.

``InProgress`` passes through the secondary statuses ``Starting``
(:data:`STARTING_SECONDS`), ``Downloading`` (:data:`DOWNLOADING_SECONDS`),
``Training`` (the job's work, from the tag ``emulator:duration-seconds``,
default 60) and ``Uploading`` (:data:`UPLOADING_SECONDS`), then ends
``Completed``; or ``Failed`` once ``emulator:fail-after-seconds`` of training
have passed; or, when stopped, ``Stopping`` for :data:`STOPPING_SECONDS`
and then ``Stopped``; or, with a capacity error (``--capacity-error-rate``),
``Failed`` with SageMaker's ``CapacityError`` at the end of ``Starting``.

Checkpoints (:mod:`airflow_quota_provider.checkpoints`): with
``CheckpointConfig.S3Uri`` the work is saved every
``emulator:checkpoint-interval-seconds`` (default 300) of training, and a
later training job with the same URI starts its ``Training`` phase from the
last save, so a stopped job loses only the work since its checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.aws_batch.training_config import instances_of
from airflow_quota_provider.checkpoints import (
    CHECKPOINT_INTERVAL_TAG,
    DEFAULT_CHECKPOINT_INTERVAL,
    checkpoint_uri,
    request_tags,
)
from airflow_quota_provider.core.jobs import checkpointed
from airflow_quota_provider.emulator.faults import CAPACITY_ERROR
from airflow_quota_provider.emulator.store import TrainingJob
from airflow_quota_provider.emulator.timers import Timer

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.account import Account

STARTING_SECONDS = 4.0
DOWNLOADING_SECONDS = 2.0
UPLOADING_SECONDS = 2.0
STOPPING_SECONDS = 2.0

DURATION_TAG = "emulator:duration-seconds"
FAIL_AFTER_TAG = "emulator:fail-after-seconds"
PHASE_ENDS = "training-phase-ends"
"""Timer: a training job's phase is over; its args name the method that starts the next."""
DEFAULT_DURATION = 60.0

_MESSAGES = {
    "Starting": "Preparing the instances for training",
    "Downloading": "Downloading input data",
    "Training": "Training image download completed. Training in progress.",
    "Uploading": "Uploading generated training model",
    "Completed": "Training job completed",
    "Stopping": "Stopping the training job",
    "Stopped": "The training job was stopped",
}


@dataclass(frozen=True)
class Timing:
    duration: float
    fail_after: float | None
    checkpoint_interval: float


def timing_from_tags(tags: Mapping[str, str]) -> Timing | str:
    """The emulated timing a job's tags ask for, or what is wrong with them."""
    values: dict[str, float] = {}
    for tag in (DURATION_TAG, FAIL_AFTER_TAG, CHECKPOINT_INTERVAL_TAG):
        if tag not in tags:
            continue
        try:
            values[tag] = float(tags[tag])
        except ValueError:
            return f"tag {tag} must be a number of seconds, got {tags[tag]!r}"
        if not math.isfinite(values[tag]) or values[tag] < 0:
            return f"tag {tag} must be a number of seconds >= 0, got {tags[tag]!r}"
    interval = values.get(CHECKPOINT_INTERVAL_TAG, DEFAULT_CHECKPOINT_INTERVAL)
    if interval <= 0:
        return f"tag {CHECKPOINT_INTERVAL_TAG} must be > 0 seconds"
    return Timing(values.get(DURATION_TAG, DEFAULT_DURATION), values.get(FAIL_AFTER_TAG), interval)


def tags_of(request: Mapping[str, Any]) -> dict[str, str]:
    return request_tags(request)


class TrainingRuntime:
    """Creates training jobs and moves them through their phases as time passes."""

    def __init__(self, world: Account) -> None:
        self.world = world
        self.on_change: Callable[[TrainingJob], None] | None = None
        world.timers.on(PHASE_ENDS, self._phase_ends)

    def create(
        self,
        name: str,
        request: dict[str, Any],
        timing: Timing,
        owner: str | None = None,
        *,
        capacity_error: bool = False,
    ) -> TrainingJob:
        """A new training job, ``InProgress``/``Starting`` now. ``request`` is already valid."""
        instances = instances_of(request)
        assert isinstance(instances, dict)
        job = TrainingJob(
            name=name,
            arn=self.world.arns.training_job(name),
            request=request,
            tags=tags_of(request),
            created=self.world.now,
            duration=timing.duration,
            fail_after=timing.fail_after,
            checkpoint_uri=checkpoint_uri(request),
            checkpoint_interval=timing.checkpoint_interval,
            instances=instances,
            owner=owner,
            capacity_error=capacity_error,
        )
        self.world.store.training_jobs[name] = job
        self._enter(job, "InProgress", "Starting")
        self._then(job, STARTING_SECONDS, self._download)
        return job

    def stop(self, job: TrainingJob) -> None:
        """Begin stopping an ``InProgress`` job; it ends ``Stopped`` after the stopping phase."""
        assert job.status == "InProgress"
        self._save_checkpoint(job)
        self._enter(job, "Stopping", "Stopping")
        self._then(job, STOPPING_SECONDS, self._stopped)

    def progress(self, job: TrainingJob) -> float:
        """Seconds of work done, resumed work included."""
        if job.training_start is None:
            return job.resumed_work
        if job.secondary != "Training":
            end = job.training_end if job.training_end is not None else job.modified
        else:
            end = self.world.now
        return min(job.duration, job.resumed_work + max(0.0, end - job.training_start))

    def in_use(self) -> dict[str, int]:
        """Instances per type held by training jobs that have not ended."""
        used: dict[str, int] = {}
        # Only counts: a scan that noted every job would make the next save encode them all.
        for job in self.world.store.training_jobs.unnoted().values():
            if job.status in ("InProgress", "Stopping"):
                for kind, count in job.instances.items():
                    used[kind] = used.get(kind, 0) + count
        return used

    # -- phases -----------------------------------------------------------------

    def _download(self, job: TrainingJob) -> None:
        if job.capacity_error:
            job.failure_reason = CAPACITY_ERROR
            self._enter(job, "Failed", "Failed", CAPACITY_ERROR)
            return
        self._enter(job, "InProgress", "Downloading")
        self._then(job, DOWNLOADING_SECONDS, self._train)

    def _train(self, job: TrainingJob) -> None:
        saved = self.world.store.checkpoints.get(job.checkpoint_uri or "", 0.0)
        job.resumed_work = min(job.duration, saved) if job.checkpoint_uri else 0.0
        job.training_start = self.world.now
        message = _MESSAGES["Training"]
        if job.resumed_work:
            message += (
                f" Resumed from the checkpoint at {job.checkpoint_uri} with "
                f"{job.resumed_work:g} of {job.duration:g} seconds of work done."
            )
        self._enter(job, "InProgress", "Training", message)
        remaining = job.duration - job.resumed_work
        if job.fail_after is not None and job.fail_after < remaining:
            self._then(job, job.fail_after, self._fail)
        else:
            self._then(job, remaining, self._upload)

    def _upload(self, job: TrainingJob) -> None:
        job.training_end = self.world.now
        if job.checkpoint_uri:
            self.world.store.checkpoints[job.checkpoint_uri] = job.duration
        self._enter(job, "InProgress", "Uploading")
        self._then(job, UPLOADING_SECONDS, self._complete)

    def _complete(self, job: TrainingJob) -> None:
        self._enter(job, "Completed", "Completed")

    def _fail(self, job: TrainingJob) -> None:
        self._save_checkpoint(job)
        job.training_end = self.world.now
        job.failure_reason = (
            f"AlgorithmError: emulated failure after {job.fail_after:g} seconds of training "
            f"(tag {FAIL_AFTER_TAG})"
        )
        self._enter(job, "Failed", "Failed", job.failure_reason)

    def _stopped(self, job: TrainingJob) -> None:
        self._enter(job, "Stopped", "Stopped")

    # -- mechanics --------------------------------------------------------------

    def _save_checkpoint(self, job: TrainingJob) -> None:
        if job.training_start is not None and job.training_end is None:
            job.training_end = self.world.now
        if not job.checkpoint_uri:
            return
        progress = self.progress(job)
        saved = checkpointed(progress, job.checkpoint_interval)
        checkpoints = self.world.store.checkpoints
        checkpoints[job.checkpoint_uri] = max(checkpoints.get(job.checkpoint_uri, 0.0), saved)

    def _enter(self, job: TrainingJob, status: str, secondary: str, message: str = "") -> None:
        now = self.world.now
        if job.transitions:
            job.transitions[-1]["EndTime"] = now
        job.transitions.append(
            {
                "Status": secondary,
                "StartTime": now,
                "StatusMessage": message or _MESSAGES.get(secondary, secondary),
            }
        )
        job.status, job.secondary, job.modified = status, secondary, now
        job.serial += 1
        if self.on_change is not None:
            self.on_change(job)

    def _then(self, job: TrainingJob, seconds: float, phase: Callable[[TrainingJob], None]) -> None:
        self.world.after(seconds, Timer(PHASE_ENDS, (job.name, job.serial, phase.__name__)))

    def _phase_ends(self, name: str, serial: int, phase: str) -> None:
        # A timer set for an earlier phase (before a stop) finds the serial moved on.
        job = self.world.store.training_jobs.get(name)
        if job is not None and job.serial == serial:
            getattr(self, phase)(job)
