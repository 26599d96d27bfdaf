"""A service job's attempts: each one SageMaker training job, mapped back to Batch statuses.

======================  ==========================================
training job            service job
======================  ==========================================
InProgress/Starting     SCHEDULED
InProgress/Downloading  STARTING
InProgress/Training     RUNNING
InProgress/Uploading    RUNNING
Completed               SUCCEEDED
Failed                  RUNNABLE (retried) or FAILED
Failed (CapacityError)  RUNNABLE, not counted as a failed attempt
Stopped                 RUNNABLE (preempted), or FAILED
======================  ==========================================

A failed attempt is retried while ``retryStrategy.attempts`` allows and the
first ``evaluateOnExit`` rule whose ``onStatusReason`` glob matches says
RETRY (no matching rule: retry, as Batch does). Preempted attempts do not
count as failed attempts; ``preemptionRetriesBeforeTermination`` caps them.

What an ended attempt means for its queue (the capacity it held freed, the
job back in line) is the dispatcher's to do (:mod:`.dispatch`): the functions
here say how the attempt ended, as an :class:`AttemptEnd`.
"""

from __future__ import annotations

import enum
import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.aws_batch.request_shape import problems_of, validation_message
from airflow_quota_provider.checkpoints import checkpoint_interval, checkpoint_uri
from airflow_quota_provider.emulator.arns import batch_training_job_name
from airflow_quota_provider.emulator.service_model import SAGEMAKER, service_model
from airflow_quota_provider.emulator.store import Attempt, ServiceJob, TrainingJob
from airflow_quota_provider.emulator.timers import Timer
from airflow_quota_provider.emulator.training import Timing, tags_of, timing_from_tags

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.account import Account
    from airflow_quota_provider.emulator.training import TrainingRuntime

ATTEMPT_TIMEOUT = "attempt-timeout"
"""Timer: an attempt's ``timeoutConfig.attemptDurationSeconds`` have passed."""

RECENT_PREEMPTED_ATTEMPTS = 5
"""How many preempted attempts ``preemptionSummary`` keeps (AWS keeps "a sliding window")."""

_IN_PROGRESS = {
    "Starting": "SCHEDULED",
    "Downloading": "STARTING",
    "Training": "RUNNING",
    "Uploading": "RUNNING",
}


class AttemptEnd(enum.Enum):
    """What follows an ended attempt, once the capacity it held is freed."""

    REQUEUE = "requeue"
    """The job is RUNNABLE again, at its original place in its share's queue."""
    FINISHED = "finished"
    """The job has ended, SUCCEEDED or FAILED."""


@dataclass(frozen=True)
class Launch:
    """A training job ready to be created for a job's next attempt."""

    name: str
    request: dict[str, Any]
    timing: Timing
    checkpoint_interval: float | None
    resumed_work: float


def training_request(job: ServiceJob, name: str) -> dict[str, Any]:
    """The payload with the attempt's name and the job's tags (which win over the payload's)."""
    request = dict(job.request)
    request["TrainingJobName"] = name
    tags = tags_of(job.request)
    tags.update(job.tags)
    if tags:
        request["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    return request


def prepare(world: Account, job: ServiceJob) -> Launch | str:
    """The next attempt's training job, or the status reason if SageMaker would refuse it.

    Batch passes the payload to SageMaker unchecked, so a bad payload fails
    the job when it is dispatched, not when it is submitted.
    """
    name = batch_training_job_name(str(job.request.get("TrainingJobName") or job.name))
    request = training_request(job, name)
    shape = service_model(SAGEMAKER).operation_model("CreateTrainingJob").input_shape
    assert shape is not None
    problems = problems_of(shape, request)
    if problems:
        return f"ValidationException: {validation_message(problems)}"
    timing = timing_from_tags(tags_of(request))
    if isinstance(timing, str):
        return f"ValidationException: {timing}"
    uri = checkpoint_uri(request)
    saved = world.store.checkpoints.get(uri, 0.0) if uri else 0.0
    interval = checkpoint_interval(request)
    return Launch(name, request, timing, interval, min(saved, timing.duration))


def launch(world: Account, training: TrainingRuntime, job: ServiceJob, launch: Launch) -> None:
    arn = world.arns.training_job(launch.name)
    job.attempts.append(Attempt(arn, launch.name, started_at=world.now_ms))
    job.status, job.status_reason = "SCHEDULED", None
    job.scheduled_at = world.now_ms
    job.stop_cause = job.stop_detail = None
    training.create(
        launch.name,
        launch.request,
        launch.timing,
        owner=job.id,
        capacity_error=world.faults.capacity_error(),
    )
    timeout = (job.timeout_config or {}).get("attemptDurationSeconds")
    if timeout:
        world.after(timeout, Timer(ATTEMPT_TIMEOUT, (job.id, launch.name, timeout)))


def time_out(world: Account, job_id: str, name: str, seconds: int) -> tuple[ServiceJob, str] | None:
    """The job to stop and why, if its attempt ``name`` outlived ``attemptDurationSeconds``."""
    job = world.store.jobs.get(job_id)
    if job is None:
        return None
    current = job.attempts[-1].training_job_name if job.attempts else None
    if job.done or current != name or job.stop_cause is not None:
        return None
    return job, f"Job attempt duration exceeded timeout ({seconds} seconds)"


def training_changed(world: Account, job: ServiceJob, training: TrainingJob) -> AttemptEnd | None:
    """Follow the current attempt's training job into the service job; how it ended, if it did."""
    if training.status == "InProgress":
        status = _IN_PROGRESS.get(training.secondary)
        if status is not None and job.stop_cause is None:
            if status == "RUNNING" and job.status != "RUNNING":
                job.started_at = world.now_ms
            job.status = status
    elif training.status == "Completed":
        reason = "Received status from SageMaker: Training job completed"
        _end_attempt(world, job, reason)
        finish(world, job, "SUCCEEDED", reason)
        return AttemptEnd.FINISHED
    elif training.status == "Failed":
        reason = f"Received status from SageMaker: {training.failure_reason}"
        _end_attempt(world, job, reason)
        if training.capacity_error:
            # SageMaker never started it: back to RUNNABLE, no failed attempt counted.
            return AttemptEnd.REQUEUE
        return _failed(world, job, reason)
    elif training.status == "Stopped":
        return _stopped(world, job)
    return None


def _stopped(world: Account, job: ServiceJob) -> AttemptEnd:
    cause, detail = job.stop_cause, job.stop_detail or ""
    if cause == "preempt":
        _end_attempt(world, job, detail)
        return _preempted(world, job)
    if cause == "terminate":
        _end_attempt(world, job, detail)
        finish(world, job, "FAILED", detail, terminated=True)
        return AttemptEnd.FINISHED
    if cause == "timeout":
        _end_attempt(world, job, detail)
        return _failed(world, job, detail)
    reason = "Received status from SageMaker: Training job stopped"
    _end_attempt(world, job, reason)
    finish(world, job, "FAILED", reason)
    return AttemptEnd.FINISHED


def _end_attempt(world: Account, job: ServiceJob, reason: str) -> None:
    attempt = job.attempts[-1]
    attempt.stopped_at = world.now_ms
    attempt.status_reason = reason
    job.stop_cause = job.stop_detail = None


def _preempted(world: Account, job: ServiceJob) -> AttemptEnd:
    job.preemptions += 1
    job.recent_preempted = [*job.recent_preempted, job.attempts[-1]][-RECENT_PREEMPTED_ATTEMPTS:]
    if not job.preemption_fails:
        return AttemptEnd.REQUEUE
    retries = (job.preemption_config or {}).get("preemptionRetriesBeforeTermination")
    reason = (
        f"PREEMPTION_RETRIES_EXHAUSTED: preempted {job.preemptions} times; "
        f"preemptionRetriesBeforeTermination is {retries}"
    )
    finish(world, job, "FAILED", reason)
    return AttemptEnd.FINISHED


def _failed(world: Account, job: ServiceJob, reason: str) -> AttemptEnd:
    job.failed_attempts += 1
    if should_retry(job, reason):
        return AttemptEnd.REQUEUE
    finish(world, job, "FAILED", reason)
    return AttemptEnd.FINISHED


def should_retry(job: ServiceJob, reason: str) -> bool:
    strategy = job.retry_strategy or {}
    if job.failed_attempts >= strategy.get("attempts", 1):
        return False
    for rule in strategy.get("evaluateOnExit") or ():
        if fnmatch.fnmatchcase(reason, rule.get("onStatusReason", "*")):
            return str(rule.get("action", "RETRY")).upper() == "RETRY"
    return True


def finish(
    world: Account, job: ServiceJob, status: str, reason: str, *, terminated: bool = False
) -> None:
    job.status, job.status_reason = status, reason
    job.stopped_at = world.now_ms
    job.is_terminated = terminated
