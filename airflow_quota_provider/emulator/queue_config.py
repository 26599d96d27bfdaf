"""The core's :class:`QueueConfig` of one job queue, read from its Batch resources.

- capacity: the sum of the ``capacityLimits`` of the queue's service
  environments (an environment shared by two queues counts fully in both:
  the core schedules one queue at a time);
- shares: the queue's quota shares, if its scheduling policy has a
  ``quotaSharePolicy``; otherwise one implicit share, :data:`IMPLICIT_SHARE`,
  owning everything, so the queue dispatches by priority, then submission;
- settings AWS has no field for (``idle_assignment: FAIR``,
  ``min_runtime_seconds``, ``victim_order``, share weights) come from the
  ``--config`` file the queue was created from, if any.
"""

from __future__ import annotations

from airflow_quota_provider.core.model import (
    UNLIMITED_BORROW,
    QueueConfig,
    Share,
    ShareState,
    Sharing,
)
from airflow_quota_provider.emulator.store import JobQueue, QuotaShare, Store

IMPLICIT_SHARE = "(queue)"
"""The share of a queue without quota shares; no quota share can be named so."""


def is_quota_managed(store: Store, queue: JobQueue) -> bool:
    arn = queue.scheduling_policy_arn
    policy = store.policies.get(arn) if arn else None
    return policy is not None and policy.quota_share_policy is not None


def queue_capacity(store: Store, queue: JobQueue) -> dict[str, int]:
    capacity: dict[str, int] = {}
    for entry in queue.service_environment_order:
        environment = store.environment(entry["serviceEnvironment"])
        if environment is None:
            continue
        for limit in environment.capacity_limits:
            unit, count = limit.get("capacityUnit"), limit.get("maxCapacity")
            if isinstance(unit, str) and isinstance(count, int):
                capacity[unit] = capacity.get(unit, 0) + count
    return capacity


def dispatching(store: Store, queue: JobQueue) -> bool:
    """Whether the queue starts jobs: at least one of its environments is ENABLED.

    A DISABLED environment keeps its capacity in the config, so disabling it
    does not preempt running jobs; it only stops new ones from starting.
    """
    for entry in queue.service_environment_order:
        environment = store.environment(entry["serviceEnvironment"])
        if environment is not None and environment.state == "ENABLED":
            return True
    return False


def queue_config(store: Store, queue: JobQueue) -> QueueConfig:
    capacity = queue_capacity(store, queue)
    extensions = queue.extensions
    if is_quota_managed(store, queue):
        shares = tuple(_share(s, extensions) for s in store.shares_of(queue.arn))
    else:
        shares = (Share(IMPLICIT_SHARE, capacity, Sharing.RESERVE),)
    if extensions is None:
        return QueueConfig(job_queue=queue.name, capacity=capacity, shares=shares)
    return QueueConfig(
        job_queue=queue.name,
        capacity=capacity,
        shares=shares,
        idle_assignment=extensions.idle_assignment,
        min_runtime_seconds=extensions.min_runtime_seconds,
        victim_order=extensions.victim_order,
    )


def _share(share: QuotaShare, extensions: QueueConfig | None) -> Share:
    sharing = Sharing(share.sharing["strategy"])
    borrow_limit = share.sharing.get("borrowLimit")
    configured = extensions.share(share.name) if extensions is not None else None
    return Share(
        name=share.name,
        capacity={c["capacityUnit"]: c["maxCapacity"] for c in share.capacity_limits},
        sharing=sharing,
        borrow_limit=UNLIMITED_BORROW if borrow_limit is None else borrow_limit,
        in_share_preemption=share.preemption.get("inSharePreemption") == "ENABLED",
        state=ShareState(share.state),
        weight=configured.weight if configured is not None else 1.0,
        min_runtime_seconds=configured.min_runtime_seconds if configured is not None else None,
    )
