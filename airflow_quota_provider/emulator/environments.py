"""Batch service environments: the pool of SageMaker capacity a job queue draws from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.emulator.batch_checks import check_capacity_limits, check_name, found
from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.pagination import named_page
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.store import ServiceEnvironment

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

MAX_CAPACITY_LIMITS = 50


def create(world: World, params: Params) -> Response:
    name = params["serviceEnvironmentName"]
    check_name("serviceEnvironmentName", name)
    if world.store.environment(name) is not None:
        raise BatchClientError(f"service environment {name} already exists")
    limits = params["capacityLimits"]
    check_capacity_limits(limits, low=1, high=MAX_CAPACITY_LIMITS)
    arn = world.arns.batch("service-environment", name)
    world.store.environments[arn] = ServiceEnvironment(
        name=name,
        arn=arn,
        state=params.get("state", "ENABLED"),
        capacity_limits=limits,
        tags=dict(params.get("tags") or {}),
    )
    return {"serviceEnvironmentName": name, "serviceEnvironmentArn": arn}


def update(world: World, params: Params) -> Response:
    identifier = params["serviceEnvironment"]
    environment = found(world.store.environment(identifier), "service environment", identifier)
    if "capacityLimits" in params:
        check_capacity_limits(params["capacityLimits"], low=1, high=MAX_CAPACITY_LIMITS)
        environment.capacity_limits = params["capacityLimits"]
    if "state" in params:
        environment.state = params["state"]
    for queue in _queues_using(world, environment):
        world.dispatcher.queue_changed(queue)
    return {"serviceEnvironmentName": environment.name, "serviceEnvironmentArn": environment.arn}


def describe_all(world: World, params: Params) -> Response:
    chosen, token = named_page(
        world.store.environments.values(),
        params.get("serviceEnvironments"),
        params,
        "serviceEnvironments may name at most 100 environments",
    )
    return {"serviceEnvironments": [describe(item) for item in chosen], "nextToken": token}


def delete(world: World, params: Params) -> Response:
    identifier = params["serviceEnvironment"]
    environment = found(world.store.environment(identifier), "service environment", identifier)
    if environment.state != "DISABLED":
        raise BatchClientError(
            f"service environment {environment.name} must be DISABLED before it is deleted"
        )
    users = _queues_using(world, environment)
    if users:
        names = ", ".join(world.store.queues[arn].name for arn in users)
        raise BatchClientError(
            f"service environment {environment.name} is used by job queues {names}"
        )
    del world.store.environments[environment.arn]
    return {}


def describe(environment: ServiceEnvironment) -> dict[str, Any]:
    return {
        "serviceEnvironmentName": environment.name,
        "serviceEnvironmentArn": environment.arn,
        "serviceEnvironmentType": "SAGEMAKER_TRAINING",
        "state": environment.state,
        "status": "VALID",
        "capacityLimits": environment.capacity_limits,
        "tags": environment.tags or None,
    }


def _queues_using(world: World, environment: ServiceEnvironment) -> list[str]:
    names = (environment.name, environment.arn)
    return [
        queue.arn
        for queue in world.store.queues.values()
        if any(entry["serviceEnvironment"] in names for entry in queue.service_environment_order)
    ]


HANDLERS: dict[str, Handler] = {
    "CreateServiceEnvironment": create,
    "UpdateServiceEnvironment": update,
    "DescribeServiceEnvironments": describe_all,
    "DeleteServiceEnvironment": delete,
}
