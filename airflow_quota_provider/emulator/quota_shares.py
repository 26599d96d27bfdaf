"""Batch quota shares: virtual queues inside one quota-managed job queue.

Beyond what the service model says, AWS documents: at most 20 shares per job
queue, 1 to 5 capacity limits per share, ``borrowLimit`` only with
LEND_AND_BORROW (-1 = unlimited). Ours, as in the config file: a share's units
must be units its queue's service environments have, and the shares of a
queue may not together own more of a unit than the queue has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.core.model import MAX_SHARES_PER_QUEUE, MAX_UNITS_PER_SHARE
from airflow_quota_provider.emulator.batch_checks import check_capacity_limits, check_name, found
from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.pagination import check_limit, page
from airflow_quota_provider.emulator.queue_config import is_quota_managed, queue_capacity
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.service_model import BATCH
from airflow_quota_provider.emulator.store import JobQueue, QuotaShare

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World


def create(world: World, params: Params) -> Response:
    name = params["quotaShareName"]
    check_name("quotaShareName", name)
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    if not is_quota_managed(world.store, queue):
        raise BatchClientError(
            f"job queue {queue.name} has no scheduling policy with a quotaSharePolicy"
        )
    siblings = world.store.shares_of(queue.arn)
    if any(s.name == name for s in siblings):
        raise BatchClientError(f"quota share {name} already exists in job queue {queue.name}")
    if len(siblings) >= MAX_SHARES_PER_QUEUE:
        raise BatchClientError(
            f"job queue {queue.name} already has {MAX_SHARES_PER_QUEUE} quota shares, "
            "the most allowed"
        )
    share = QuotaShare(
        name=name,
        arn=world.arns.quota_share(queue.name, name),
        job_queue_arn=queue.arn,
        capacity_limits=params["capacityLimits"],
        sharing=params["resourceSharingConfiguration"],
        preemption=params["preemptionConfiguration"],
        state=params.get("state", "ENABLED"),
        tags=dict(params.get("tags") or {}),
    )
    _check_share(world, queue, share)
    world.store.shares[share.arn] = share
    world.dispatcher.queue_changed(queue.arn)
    return {"quotaShareName": name, "quotaShareArn": share.arn}


def update(world: World, params: Params) -> Response:
    share = _share(world, params["quotaShareArn"])
    queue = world.store.queues[share.job_queue_arn]
    changed = QuotaShare(
        name=share.name,
        arn=share.arn,
        job_queue_arn=share.job_queue_arn,
        capacity_limits=params.get("capacityLimits", share.capacity_limits),
        sharing=params.get("resourceSharingConfiguration", share.sharing),
        preemption=params.get("preemptionConfiguration", share.preemption),
        state=params.get("state", share.state),
        tags=share.tags,
    )
    _check_share(world, queue, changed)
    world.store.shares[share.arn] = changed
    world.dispatcher.queue_changed(queue.arn)
    return {"quotaShareName": share.name, "quotaShareArn": share.arn}


def describe_one(world: World, params: Params) -> Response:
    share = _share(world, params["quotaShareArn"])
    return {**describe(share), "tags": share.tags or None}


def list_all(world: World, params: Params) -> Response:
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    shares = sorted(world.store.shares_of(queue.arn), key=lambda s: s.name)
    limit = check_limit(params.get("maxResults"), 100, BATCH)
    chosen, token = page(
        shares, lambda s: (s.name,), limit=limit, token=params.get("nextToken"), service=BATCH
    )
    return {"quotaShares": [describe(s) for s in chosen], "nextToken": token}


def delete(world: World, params: Params) -> Response:
    share = _share(world, params["quotaShareArn"])
    unfinished = [
        job
        for job in world.store.jobs_of(share.job_queue_arn)
        if job.share == share.name and not job.done
    ]
    if unfinished:
        raise BatchClientError(
            f"quota share {share.name} has {len(unfinished)} unfinished jobs; "
            "terminate them or let them finish first"
        )
    del world.store.shares[share.arn]
    world.dispatcher.queue_changed(share.job_queue_arn)
    return {}


def describe(share: QuotaShare) -> dict[str, Any]:
    return {
        "quotaShareName": share.name,
        "quotaShareArn": share.arn,
        "jobQueueArn": share.job_queue_arn,
        "capacityLimits": share.capacity_limits,
        "resourceSharingConfiguration": share.sharing,
        "preemptionConfiguration": share.preemption,
        "state": share.state,
        "status": "VALID",
    }


def _share(world: World, arn: str) -> QuotaShare:
    return found(world.store.shares.get(arn), "quota share", arn)


def _check_share(world: World, queue: JobQueue, share: QuotaShare) -> None:
    check_capacity_limits(share.capacity_limits, low=1, high=MAX_UNITS_PER_SHARE)
    _check_borrow_limit(share.sharing)
    capacity = queue_capacity(world.store, queue)
    owned = {c["capacityUnit"]: c["maxCapacity"] for c in share.capacity_limits}
    for unit in owned:
        if unit not in capacity:
            units = ", ".join(sorted(capacity)) or "none"
            raise BatchClientError(
                f"capacityUnit {unit} is not in job queue {queue.name}'s service environments "
                f"(they have {units})"
            )
    for unit, count in owned.items():
        others = sum(
            c["maxCapacity"]
            for s in world.store.shares_of(queue.arn)
            if s.arn != share.arn
            for c in s.capacity_limits
            if c["capacityUnit"] == unit
        )
        if others + count > capacity[unit]:
            raise BatchClientError(
                f"quota shares of job queue {queue.name} would own {others + count} {unit}; "
                f"its service environments have {capacity[unit]}"
            )


def _check_borrow_limit(sharing: dict[str, Any]) -> None:
    limit = sharing.get("borrowLimit")
    if limit is None:
        return
    if sharing["strategy"] != "LEND_AND_BORROW":
        raise BatchClientError(
            f"borrowLimit applies only to LEND_AND_BORROW, not {sharing['strategy']}"
        )
    if limit < -1:
        raise BatchClientError(f"borrowLimit must be -1 (unlimited) or >= 0, got {limit}")


HANDLERS: dict[str, Handler] = {
    "CreateQuotaShare": create,
    "UpdateQuotaShare": update,
    "DescribeQuotaShare": describe_one,
    "ListQuotaShares": list_all,
    "DeleteQuotaShare": delete,
}
