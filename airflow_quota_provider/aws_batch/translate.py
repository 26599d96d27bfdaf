"""AWS's answers turned into the core's quota model.

AWS reports only what each job holds (``capacityUsage``); who lends to whom
is derived by :func:`airflow_quota_provider.core.occupancy.occupancy`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES
from airflow_quota_provider.core.model import (
    UNLIMITED_BORROW,
    QueueConfig,
    Share,
    ShareState,
    Sharing,
)
from airflow_quota_provider.core.usage import held


def share_from_aws(share: Mapping[str, Any]) -> Share:
    """A :class:`Share` from one ``ListQuotaShares``/``DescribeQuotaShare`` entry."""
    sharing = share.get("resourceSharingConfiguration") or {}
    preemption = share.get("preemptionConfiguration") or {}
    return Share(
        name=share["quotaShareName"],
        capacity={c["capacityUnit"]: int(c["maxCapacity"]) for c in share["capacityLimits"]},
        sharing=Sharing(sharing.get("strategy", "RESERVE")),
        borrow_limit=int(sharing.get("borrowLimit", UNLIMITED_BORROW)),
        in_share_preemption=preemption.get("inSharePreemption") == "ENABLED",
        state=ShareState(share.get("state", "ENABLED")),
    )


def queue_config_from_aws(
    job_queue: str,
    shares: Iterable[Mapping[str, Any]],
    environments: Iterable[Mapping[str, Any]],
) -> QueueConfig:
    """The queue's config: its shares, and the capacity of its service environments."""
    capacity: dict[str, int] = {}
    for environment in environments:
        for unit, count in limits_of(environment.get("capacityLimits")).items():
            capacity[unit] = capacity.get(unit, 0) + count
    return QueueConfig(
        job_queue=job_queue,
        capacity=capacity,
        shares=tuple(share_from_aws(s) for s in shares),
    )


def limits_of(limits: Any) -> dict[str, int]:
    """``maxCapacity`` per ``capacityUnit`` of a ``capacityLimits`` list."""
    capacity: dict[str, int] = {}
    for limit in limits or ():
        unit = str(limit["capacityUnit"])
        capacity[unit] = capacity.get(unit, 0) + int(limit["maxCapacity"])
    return capacity


def demand_of(job: Mapping[str, Any]) -> dict[str, int]:
    """Instances per type from a job's ``capacityUsage`` (a fraction counts as a whole one)."""
    demand: dict[str, int] = {}
    for item in job.get("capacityUsage") or ():
        unit = item["capacityUnit"]
        demand[unit] = demand.get(unit, 0) + math.ceil(float(item["quantity"]))
    return demand


def usage_from_jobs(jobs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Instances held per share and unit, from service job summaries holding capacity."""
    return held(
        (job.get("quotaShareName") or "", demand_of(job))
        for job in jobs
        if job.get("status") in HOLDING_STATUSES
    )


def share_limits(config: QueueConfig, share: Share) -> dict[str, int]:
    """The most of each unit ``share`` may ever hold, borrowing included."""
    units = sorted(set(config.capacity) | set(share.capacity))
    return {unit: config.share_limit(share, unit) for unit in units}
