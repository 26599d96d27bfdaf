"""Batch service jobs: submit, describe, list, reprioritise, terminate.

A submission the quota engine says could never run (an unknown share, more
than the share could ever hold) is refused with a ClientException naming the
core's reason; AWS would accept it and leave it stalled at the head of its
share with ``MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED``.

``clientToken``: the same token with the same request returns the job it
created; with a different request it is refused. (The API reference says the
second identical request "is rejected"; we take the first
reading, which is also how other AWS idempotency tokens behave.)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.aws_batch.training_config import instances_of
from airflow_quota_provider.core import WaitingJob, check_submission
from airflow_quota_provider.emulator.arns import new_id
from airflow_quota_provider.emulator.batch_checks import check_name, check_range, found
from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.queue_config import IMPLICIT_SHARE, is_quota_managed
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.store import JobQueue, ServiceJob
from airflow_quota_provider.emulator.training import tags_of, timing_from_tags

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

MAX_PRIORITY = 9999
MAX_ATTEMPTS = 10


def submit(world: World, params: Params) -> Response:
    token = params.get("clientToken")
    fingerprint = json.dumps(
        {k: v for k, v in params.items() if k != "clientToken"}, sort_keys=True
    )
    if token is not None and token in world.store.client_tokens:
        seen, job_id = world.store.client_tokens[token]
        if seen != fingerprint:
            raise BatchClientError(
                f"clientToken {token} was already used by a different SubmitServiceJob "
                f"request (job {job_id})"
            )
        return _ids(world.store.jobs[job_id])
    job = _new_job(world, params)
    world.store.jobs[job.id] = job
    if token is not None:
        world.store.client_tokens[token] = (fingerprint, job.id)
    world.dispatcher.submit(job)
    return _ids(job)


def _new_job(world: World, params: Params) -> ServiceJob:
    check_name("jobName", params["jobName"])
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    if queue.state != "ENABLED":
        raise BatchClientError(f"job queue {queue.name} is DISABLED and accepts no new jobs")
    _check_numbers(params)
    share = _share_name(world, queue, params)
    request = _payload(params["serviceRequestPayload"])
    demand = instances_of(request)
    if isinstance(demand, str):
        raise BatchClientError(f"serviceRequestPayload: {demand}")
    tags = {**tags_of(request), **(params.get("tags") or {})}
    timing = timing_from_tags(tags)
    if isinstance(timing, str):
        raise BatchClientError(timing)
    job_id = new_id()
    priority = params.get("schedulingPriority", 0)
    config = world.dispatcher.state(queue.arn).config
    refusal = check_submission(config, WaitingJob(job_id, share, demand, priority, world.now))
    if refusal is not None:
        raise BatchClientError(f"{refusal.code.value}: {refusal.message}")
    return ServiceJob(
        id=job_id,
        arn=world.arns.service_job(job_id),
        name=params["jobName"],
        queue_arn=queue.arn,
        share=share,
        payload=params["serviceRequestPayload"],
        request=request,
        demand=demand,
        priority=priority,
        created_at=world.now_ms,
        sequence=len(world.store.jobs),
        submitted=_submitted(world),
        retry_strategy=params.get("retryStrategy"),
        preemption_config=params.get("preemptionConfiguration"),
        timeout_config=params.get("timeoutConfig"),
        tags=dict(params.get("tags") or {}),
        share_identifier=params.get("shareIdentifier"),
    )


def _submitted(world: World) -> float:
    """The time the core orders a job by: strictly after every earlier submission.

    Jobs submitted at one instant (a stopped clock, one millisecond) would
    otherwise be ordered by their random ids instead of by arrival.
    """
    store = world.store
    store.last_submitted = max(world.now, store.last_submitted + 1e-6)
    return store.last_submitted


def _check_numbers(params: Params) -> None:
    check_range("schedulingPriority", params.get("schedulingPriority"), 0, MAX_PRIORITY)
    retry = params.get("retryStrategy") or {}
    check_range("retryStrategy.attempts", retry.get("attempts"), 1, MAX_ATTEMPTS)
    preemption = params.get("preemptionConfiguration") or {}
    retries = preemption.get("preemptionRetriesBeforeTermination")
    check_range("preemptionRetriesBeforeTermination", retries, 0, 2**31 - 1)
    timeout = (params.get("timeoutConfig") or {}).get("attemptDurationSeconds")
    check_range("timeoutConfig.attemptDurationSeconds", timeout, 1, 2**31 - 1)


def _share_name(world: World, queue: JobQueue, params: Params) -> str:
    name, identifier = params.get("quotaShareName"), params.get("shareIdentifier")
    if is_quota_managed(world.store, queue):
        if identifier is not None:
            raise BatchClientError(
                f"job queue {queue.name} uses quota shares: "
                "give quotaShareName, not shareIdentifier"
            )
        if name is None:
            raise BatchClientError(
                f"job queue {queue.name} uses quota shares: quotaShareName is required"
            )
        return str(name)
    if name is not None:
        raise BatchClientError(f"job queue {queue.name} has no quota shares; omit quotaShareName")
    return IMPLICIT_SHARE


def _payload(text: str) -> dict[str, Any]:
    try:
        request = json.loads(text)
    except ValueError as error:
        raise BatchClientError(f"serviceRequestPayload is not JSON: {error}") from None
    if not isinstance(request, dict):
        raise BatchClientError(
            "serviceRequestPayload must be a JSON object (a CreateTrainingJob request)"
        )
    return request


def describe_one(world: World, params: Params) -> Response:
    job = _job(world, params["jobId"])
    summary = job.recent_preempted
    return {
        **_common(world, job),
        "attempts": [a.describe() for a in job.attempts] or None,
        "jobQueue": job.queue_arn,
        "retryStrategy": job.retry_strategy,
        "schedulingPriority": job.priority,
        "serviceRequestPayload": job.payload,
        "preemptionConfiguration": job.preemption_config,
        "preemptionSummary": {
            "preemptedAttemptCount": job.preemptions,
            "recentPreemptedAttempts": [a.describe() for a in summary],
        }
        if job.preemptions
        else None,
        "tags": job.tags or None,
        "timeoutConfig": job.timeout_config,
        # The model requires startedAt; 0 says "not started yet".
        "startedAt": job.started_at or 0,
    }


def _common(world: World, job: ServiceJob) -> dict[str, Any]:
    """The members DescribeServiceJob and ListServiceJobs share."""
    latest = job.attempts[-1].describe()["serviceResourceId"] if job.attempts else None
    return {
        "latestAttempt": {"serviceResourceId": latest} if latest else None,
        "capacityUsage": [
            {"capacityUnit": unit, "quantity": float(count)} for unit, count in job.demand.items()
        ],
        "createdAt": job.created_at,
        "isTerminated": job.is_terminated,
        "jobArn": job.arn,
        "jobId": job.id,
        "jobName": job.name,
        "scheduledAt": job.scheduled_at,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "shareIdentifier": job.share_identifier,
        "quotaShareName": None if job.share == IMPLICIT_SHARE else job.share,
        "status": job.status,
        "statusReason": job.status_reason or world.dispatcher.wait_reason(job),
        "startedAt": job.started_at,
        "stoppedAt": job.stopped_at,
    }


def summary(world: World, job: ServiceJob) -> dict[str, Any]:
    return _common(world, job)


def update(world: World, params: Params) -> Response:
    job = _job(world, params["jobId"])
    priority = params["schedulingPriority"]
    check_range("schedulingPriority", priority, 0, MAX_PRIORITY)
    if job.done:
        raise BatchClientError(f"job {job.id} is {job.status}; its priority can no longer change")
    world.dispatcher.reprioritize(job, priority)
    return _ids(job)


def terminate(world: World, params: Params) -> Response:
    job = _job(world, params["jobId"])
    world.dispatcher.terminate(job, params["reason"])
    return {}


def terminate_many(world: World, params: Params) -> Response:
    successful, errors = [], []
    for reference in params["jobs"]:
        try:
            job = _job(world, reference, "jobs")
        except BatchClientError as error:
            errors.append({"job": reference, "code": error.code, "message": error.message})
            continue
        world.dispatcher.terminate(job, params["reason"])
        successful.append(reference)
    return {"successful": successful, "errors": errors}


def _job(world: World, reference: str, member: str = "jobId") -> ServiceJob:
    """The job a ``jobId`` names: by its id or, as AWS also takes, by its ARN."""
    try:
        job_id = world.arns.service_job_id(reference)
    except ValueError as error:
        raise BatchClientError(f"{member}: {error}") from None
    job = world.store.jobs.get(job_id) if job_id is not None else None
    return found(job, "service job", reference)


def _ids(job: ServiceJob) -> Response:
    return {"jobArn": job.arn, "jobName": job.name, "jobId": job.id}


HANDLERS: dict[str, Handler] = {
    "SubmitServiceJob": submit,
    "DescribeServiceJob": describe_one,
    "UpdateServiceJob": update,
    "TerminateServiceJob": terminate,
    "TerminateServiceJobs": terminate_many,
}
