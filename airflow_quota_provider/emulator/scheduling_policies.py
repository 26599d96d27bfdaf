"""Batch scheduling policies; a ``quotaSharePolicy`` makes a job queue quota-managed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.emulator.batch_checks import check_name, found
from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.pagination import check_limit, page
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.service_model import BATCH
from airflow_quota_provider.emulator.store import SchedulingPolicy

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World


def create(world: World, params: Params) -> Response:
    name = params["name"]
    check_name("name", name)
    if world.store.policy(name) is not None:
        raise BatchClientError(f"scheduling policy {name} already exists")
    _check_one_kind(params)
    arn = world.arns.batch("scheduling-policy", name)
    world.store.policies[arn] = SchedulingPolicy(
        name=name,
        arn=arn,
        quota_share_policy=params.get("quotaSharePolicy"),
        fairshare_policy=params.get("fairsharePolicy"),
        tags=dict(params.get("tags") or {}),
    )
    return {"name": name, "arn": arn}


def update(world: World, params: Params) -> Response:
    policy = found(world.store.policies.get(params["arn"]), "scheduling policy", params["arn"])
    _check_one_kind(params)
    if policy.quota_share_policy is not None and "fairsharePolicy" in params:
        raise BatchClientError(
            f"scheduling policy {policy.name} has a quotaSharePolicy and cannot become fair-share"
        )
    if "quotaSharePolicy" in params:
        policy.quota_share_policy = params["quotaSharePolicy"]
    if "fairsharePolicy" in params:
        policy.fairshare_policy = params["fairsharePolicy"]
    for queue in world.store.queues.values():
        if queue.scheduling_policy_arn == policy.arn:
            world.dispatcher.queue_changed(queue.arn)
    return {}


def describe_all(world: World, params: Params) -> Response:
    wanted = params["arns"]
    policies = [world.store.policies[arn] for arn in wanted if arn in world.store.policies]
    return {"schedulingPolicies": [describe(p) for p in policies]}


def list_all(world: World, params: Params) -> Response:
    policies = sorted(world.store.policies.values(), key=lambda p: p.arn)
    limit = check_limit(params.get("maxResults"), 100, BATCH)
    chosen, token = page(
        policies, lambda p: (p.arn,), limit=limit, token=params.get("nextToken"), service=BATCH
    )
    return {"schedulingPolicies": [{"arn": p.arn} for p in chosen], "nextToken": token}


def delete(world: World, params: Params) -> Response:
    policy = found(world.store.policies.get(params["arn"]), "scheduling policy", params["arn"])
    users = [q.name for q in world.store.queues.values() if q.scheduling_policy_arn == policy.arn]
    if users:
        raise BatchClientError(
            f"scheduling policy {policy.name} is used by job queues {', '.join(users)}"
        )
    del world.store.policies[policy.arn]
    return {}


def describe(policy: SchedulingPolicy) -> dict[str, Any]:
    return {
        "name": policy.name,
        "arn": policy.arn,
        "quotaSharePolicy": policy.quota_share_policy,
        "fairsharePolicy": policy.fairshare_policy,
        "tags": policy.tags or None,
    }


def _check_one_kind(params: Params) -> None:
    if "quotaSharePolicy" in params and "fairsharePolicy" in params:
        raise BatchClientError("specify either quotaSharePolicy or fairsharePolicy, not both")


HANDLERS: dict[str, Handler] = {
    "CreateSchedulingPolicy": create,
    "UpdateSchedulingPolicy": update,
    "DescribeSchedulingPolicies": describe_all,
    "ListSchedulingPolicies": list_all,
    "DeleteSchedulingPolicy": delete,
}
