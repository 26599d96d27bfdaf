"""SageMaker's Create/Describe/Stop/ListTrainingJobs, and AddTags and ListTags of a training job.

Errors as SageMaker sends them: an unknown name in DescribeTrainingJob is a
``ValidationException`` "Requested resource not found." (what the amazon
provider's operators test for), in StopTrainingJob the modelled
``ResourceNotFound``; a taken name is ``ResourceInUse``; a direct create
beyond ``--instance-limit`` is ``ResourceLimitExceeded``. Training jobs that
Batch creates are bounded by their queue's capacity instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.aws_batch.training_config import instances_of
from airflow_quota_provider.emulator.errors import (
    ResourceInUse,
    ResourceLimitExceeded,
    ResourceNotFound,
    SageMakerValidationError,
)
from airflow_quota_provider.emulator.pagination import check_limit, page
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.service_model import SAGEMAKER, service_model
from airflow_quota_provider.emulator.store import TrainingJob
from airflow_quota_provider.emulator.training import tags_of, timing_from_tags

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

DEFAULT_MAX_RUNTIME = 86_400


def find(world: World, name: str) -> TrainingJob | None:
    """The training job ``name``, ignoring case as SageMaker does (its ARNs are lowercase)."""
    jobs = world.store.training_jobs
    found = jobs.get(name)
    if found is None:
        folded = name.casefold()
        found = next((job for key, job in jobs.items() if key.casefold() == folded), None)
    return found


def create(world: World, params: Params) -> Response:
    name = params["TrainingJobName"]
    existing = find(world, name)
    if existing is not None:
        raise ResourceInUse(
            f"Training job names must be unique within an AWS account and region, "
            f"and a training job with this name already exists ({existing.arn})"
        )
    instances = instances_of(params)
    if isinstance(instances, str):
        raise SageMakerValidationError(instances)
    timing = timing_from_tags(tags_of(params))
    if isinstance(timing, str):
        raise SageMakerValidationError(timing)
    _check_limits(world, instances)
    job = world.training.create(name, params, timing)
    return {"TrainingJobArn": job.arn}


def _check_limits(world: World, instances: dict[str, int]) -> None:
    used = world.training.in_use()
    for kind, count in sorted(instances.items()):
        limit = world.instance_limits.get(kind)
        if limit is not None and used.get(kind, 0) + count > limit:
            raise ResourceLimitExceeded(
                f"The account-level service limit '{kind} for training job usage' is {limit} "
                f"Instances, with current utilization of {used.get(kind, 0)} Instances and a "
                f"request delta of {count} Instances. Please use AWS Service Quotas to request "
                "an increase for this quota."
            )


def describe_one(world: World, params: Params) -> Response:
    job = find(world, params["TrainingJobName"])
    if job is None:
        raise SageMakerValidationError("Requested resource not found.")
    return describe(world, job)


def describe(world: World, job: TrainingJob) -> dict[str, Any]:
    output = service_model(SAGEMAKER).operation_model("DescribeTrainingJob").output_shape
    request_shape = service_model(SAGEMAKER).operation_model("CreateTrainingJob").input_shape
    assert output is not None and request_shape is not None
    echoed = {
        name: value
        for name, value in job.request.items()
        if name in output.members
        and name in request_shape.members
        and output.members[name].name == request_shape.members[name].name
    }
    ended = job.status in ("Completed", "Failed", "Stopped")
    seconds = _training_seconds(job) if ended else None
    return {
        **echoed,
        "TrainingJobName": job.name,
        "TrainingJobArn": job.arn,
        "ModelArtifacts": {"S3ModelArtifacts": _artifacts(job)},
        "TrainingJobStatus": job.status,
        "SecondaryStatus": job.secondary,
        "FailureReason": job.failure_reason,
        "StoppingCondition": job.request.get("StoppingCondition")
        or {"MaxRuntimeInSeconds": DEFAULT_MAX_RUNTIME},
        "CreationTime": job.created,
        "TrainingStartTime": job.training_start,
        "TrainingEndTime": job.training_end if ended else None,
        "LastModifiedTime": job.modified,
        "SecondaryStatusTransitions": job.transitions,
        "TrainingTimeInSeconds": seconds,
        "BillableTimeInSeconds": seconds,
    }


def _training_seconds(job: TrainingJob) -> int:
    if job.training_start is None or job.training_end is None:
        return 0
    return int(job.training_end - job.training_start)


def _artifacts(job: TrainingJob) -> str:
    output = job.request.get("OutputDataConfig") or {}
    base = str(output.get("S3OutputPath", "s3://emulated-bucket/output")).rstrip("/")
    return f"{base}/{job.name}/output/model.tar.gz"


def stop(world: World, params: Params) -> Response:
    name = params["TrainingJobName"]
    job = find(world, name)
    if job is None:
        raise ResourceNotFound(f"Training job {name} does not exist.")
    if job.status != "InProgress":
        raise SageMakerValidationError(
            f"The request was rejected because the training job is in status {job.status}."
        )
    world.training.stop(job)
    return {}


def list_all(world: World, params: Params) -> Response:
    jobs = [job for job in world.store.training_jobs.values() if _matches(job, params)]
    sort_by = params.get("SortBy", "CreationTime")
    descending = params.get("SortOrder", "Ascending") == "Descending"

    def key(job: TrainingJob) -> tuple[Any, ...]:
        if sort_by == "Name":
            return (job.name,)
        if sort_by == "Status":
            return (job.status, job.name)
        return (job.created, job.name)

    jobs.sort(key=key, reverse=descending)
    limit = check_limit(params.get("MaxResults"), 10, SAGEMAKER)
    chosen, token = page(
        jobs,
        key,
        limit=limit,
        token=params.get("NextToken"),
        service=SAGEMAKER,
        descending=descending,
    )
    return {"TrainingJobSummaries": [_summary(job) for job in chosen], "NextToken": token}


def _matches(job: TrainingJob, params: Params) -> bool:
    checks = (
        ("CreationTimeAfter", lambda t: job.created > t),
        ("CreationTimeBefore", lambda t: job.created < t),
        ("LastModifiedTimeAfter", lambda t: job.modified > t),
        ("LastModifiedTimeBefore", lambda t: job.modified < t),
        ("NameContains", lambda text: text.lower() in job.name.lower()),
        ("StatusEquals", lambda status: job.status == status),
    )
    return all(check(params[name]) for name, check in checks if params.get(name) is not None)


def _summary(job: TrainingJob) -> dict[str, Any]:
    ended = job.status in ("Completed", "Failed", "Stopped")
    return {
        "TrainingJobName": job.name,
        "TrainingJobArn": job.arn,
        "CreationTime": job.created,
        "TrainingEndTime": job.training_end if ended else None,
        "LastModifiedTime": job.modified,
        "TrainingJobStatus": job.status,
        "SecondaryStatus": job.secondary,
    }


def _by_arn(world: World, arn: str) -> TrainingJob:
    job = next(
        (j for j in world.store.training_jobs.values() if j.arn.casefold() == arn.casefold()),
        None,
    )
    if job is None:
        raise SageMakerValidationError(f"Requested resource not found: {arn}")
    return job


def add_tags(world: World, params: Params) -> Response:
    """Add or overwrite tags of a training job, by its ARN (at most 50 in all, as SageMaker)."""
    job = _by_arn(world, params["ResourceArn"])
    added = {str(t["Key"]): str(t.get("Value", "")) for t in params["Tags"]}
    merged = {**job.tags, **added}
    if len(merged) > MAX_TAGS:
        raise SageMakerValidationError(
            f"A training job can have at most {MAX_TAGS} tags; these would make {len(merged)}"
        )
    job.tags = merged
    return {"Tags": [{"Key": k, "Value": v} for k, v in added.items()]}


MAX_TAGS = 50


def list_tags(world: World, params: Params) -> Response:
    """A training job's tags, by its ARN, 50 or more per page (SageMaker's minimum)."""
    job = _by_arn(world, params["ResourceArn"])
    tags = sorted(job.tags.items())
    limit = check_limit(params.get("MaxResults"), 50, SAGEMAKER, maximum=100)
    chosen, token = page(
        tags, lambda tag: (tag[0],), limit=limit, token=params.get("NextToken"), service=SAGEMAKER
    )
    return {"Tags": [{"Key": k, "Value": v} for k, v in chosen], "NextToken": token}


HANDLERS: dict[str, Handler] = {
    "AddTags": add_tags,
    "ListTags": list_tags,
    "CreateTrainingJob": create,
    "DescribeTrainingJob": describe_one,
    "StopTrainingJob": stop,
    "ListTrainingJobs": list_all,
}
