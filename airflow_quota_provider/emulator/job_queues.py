"""Batch job queues of type ``SAGEMAKER_TRAINING``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.emulator.batch_checks import check_name, check_range, found
from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.pagination import named_page
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.store import JobQueue

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

MIN_TIME_LIMIT, MAX_TIME_LIMIT = 600, 86_400


def create(world: World, params: Params) -> Response:
    name = params["jobQueueName"]
    check_name("jobQueueName", name)
    if world.store.queue(name) is not None:
        raise BatchClientError(f"job queue {name} already exists")
    queue_type = params.get("jobQueueType")
    if queue_type != "SAGEMAKER_TRAINING":
        raise BatchClientError(
            f"jobQueueType {queue_type} is not supported here; this endpoint emulates "
            "SAGEMAKER_TRAINING job queues only"
        )
    if params.get("computeEnvironmentOrder"):
        raise BatchClientError("a SAGEMAKER_TRAINING job queue takes serviceEnvironmentOrder")
    _check_settings(world, params)
    arn = world.arns.batch("job-queue", name)
    world.store.queues[arn] = JobQueue(
        name=name,
        arn=arn,
        state=params.get("state", "ENABLED"),
        priority=params["priority"],
        job_queue_type=queue_type,
        scheduling_policy_arn=params.get("schedulingPolicyArn"),
        service_environment_order=_order(world, params.get("serviceEnvironmentOrder")),
        time_limit_actions=params.get("jobStateTimeLimitActions") or [],
        tags=dict(params.get("tags") or {}),
    )
    world.dispatcher.queue_changed(arn)
    return {"jobQueueName": name, "jobQueueArn": arn}


def update(world: World, params: Params) -> Response:
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    _check_settings(world, params)
    if "schedulingPolicyArn" in params:
        _check_policy_change(world, queue, params["schedulingPolicyArn"])
        queue.scheduling_policy_arn = params["schedulingPolicyArn"]
    if "serviceEnvironmentOrder" in params:
        queue.service_environment_order = _order(world, params["serviceEnvironmentOrder"])
    if "state" in params:
        queue.state = params["state"]
    if "priority" in params:
        queue.priority = params["priority"]
    if "jobStateTimeLimitActions" in params:
        queue.time_limit_actions = params["jobStateTimeLimitActions"]
    world.dispatcher.queue_changed(queue.arn)
    return {"jobQueueName": queue.name, "jobQueueArn": queue.arn}


def describe_all(world: World, params: Params) -> Response:
    chosen, token = named_page(
        world.store.queues.values(),
        params.get("jobQueues"),
        params,
        "jobQueues may name at most 100 job queues",
    )
    return {"jobQueues": [describe(item) for item in chosen], "nextToken": token}


def delete(world: World, params: Params) -> Response:
    """Delete a DISABLED queue; as on AWS its unfinished jobs are terminated."""
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    if queue.state != "DISABLED":
        raise BatchClientError(f"job queue {queue.name} must be DISABLED before it is deleted")
    for job in world.store.jobs_of(queue.arn):
        world.dispatcher.terminate(job, "Terminated because its job queue was deleted")
    for share in world.store.shares_of(queue.arn):
        del world.store.shares[share.arn]
    world.dispatcher.queue_deleted(queue.arn)
    del world.store.queues[queue.arn]
    return {}


def describe(queue: JobQueue) -> dict[str, Any]:
    return {
        "jobQueueName": queue.name,
        "jobQueueArn": queue.arn,
        "state": queue.state,
        "schedulingPolicyArn": queue.scheduling_policy_arn,
        "status": "VALID",
        "priority": queue.priority,
        "computeEnvironmentOrder": [],
        "serviceEnvironmentOrder": queue.service_environment_order,
        "jobQueueType": queue.job_queue_type,
        "tags": queue.tags or None,
        "jobStateTimeLimitActions": queue.time_limit_actions or None,
    }


def _check_settings(world: World, params: Params) -> None:
    check_range("priority", params.get("priority"), 0, 1000)
    for action in params.get("jobStateTimeLimitActions") or ():
        check_range("maxTimeSeconds", action["maxTimeSeconds"], MIN_TIME_LIMIT, MAX_TIME_LIMIT)
    arn = params.get("schedulingPolicyArn")
    if arn is not None:
        found(world.store.policies.get(arn), "scheduling policy", arn)


def _order(world: World, order: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if not order:
        raise BatchClientError("serviceEnvironmentOrder must name at least one service environment")
    result = []
    for entry in sorted(order, key=lambda e: e["order"]):
        environment = found(
            world.store.environment(entry["serviceEnvironment"]),
            "service environment",
            entry["serviceEnvironment"],
        )
        result.append({"order": entry["order"], "serviceEnvironment": environment.arn})
    return result


def _check_policy_change(world: World, queue: JobQueue, new_arn: str) -> None:
    old = world.store.policies.get(queue.scheduling_policy_arn or "")
    new = world.store.policies[new_arn]
    if old is not None and old.quota_share_policy is not None and new.quota_share_policy is None:
        raise BatchClientError(
            f"job queue {queue.name} has a quotaSharePolicy and cannot switch to fair-share"
        )
    if old is not new and any(not job.done for job in world.store.jobs_of(queue.arn)):
        raise BatchClientError(
            f"job queue {queue.name} has unfinished jobs; its scheduling policy cannot change now"
        )


HANDLERS: dict[str, Handler] = {
    "CreateJobQueue": create,
    "UpdateJobQueue": update,
    "DescribeJobQueues": describe_all,
    "DeleteJobQueue": delete,
}
