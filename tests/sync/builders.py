"""Small builders for sync tests: targets from config shares, and AWS's answers as dicts."""

from __future__ import annotations

from typing import Any

from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from airflow_quota_provider.sync.shapes import spec_from_share
from airflow_quota_provider.sync.snapshot import AwsState
from airflow_quota_provider.sync.target import SyncTarget

P4D = "ml.p4d.24xlarge"
G5 = "ml.g5.12xlarge"
QUEUE = "ml-training"
ARN = "arn:aws:batch:us-east-1:123456789012"
ENV_ARN = f"{ARN}:service-environment/{QUEUE}-env"
POLICY_ARN = f"{ARN}:scheduling-policy/{QUEUE}-policy"


def target(*shares: Share, capacity: dict[str, int] | None = None, **names: Any) -> SyncTarget:
    config = QueueConfig(QUEUE, capacity or {P4D: 16}, shares)
    return SyncTarget(
        config,
        names.pop("service_environment", f"{QUEUE}-env"),
        names.pop("scheduling_policy", f"{QUEUE}-policy"),
        **names,
    )


def nlp(**changes: Any) -> Share:
    changes.setdefault("sharing", Sharing.LEND_AND_BORROW)
    return Share("nlp", changes.pop("capacity", {P4D: 8}), **changes)


def vision(**changes: Any) -> Share:
    changes.setdefault("sharing", Sharing.LEND)
    return Share("vision", changes.pop("capacity", {P4D: 6}), **changes)


def aws_share(share: Share) -> dict[str, Any]:
    """The ListQuotaShares item of ``share``, as AWS would list it after creating it."""
    request = spec_from_share(share).request()
    return {
        "quotaShareName": share.name,
        "quotaShareArn": f"{ARN}:quota-share/{QUEUE}/{share.name}",
        "jobQueueArn": f"{ARN}:job-queue/{QUEUE}",
        "status": "VALID",
        **request,
    }


def environment(capacity: dict[str, int], **fields: Any) -> dict[str, Any]:
    return {
        "serviceEnvironmentName": f"{QUEUE}-env",
        "serviceEnvironmentArn": ENV_ARN,
        "serviceEnvironmentType": "SAGEMAKER_TRAINING",
        "state": "ENABLED",
        "status": "VALID",
        "capacityLimits": [{"capacityUnit": u, "maxCapacity": n} for u, n in capacity.items()],
        **fields,
    }


def policy(name: str = f"{QUEUE}-policy", *, fair_share: bool = False) -> dict[str, Any]:
    kind = (
        {"fairsharePolicy": {"shareDecaySeconds": 0}}
        if fair_share
        else {"quotaSharePolicy": {"idleResourceAssignmentStrategy": "FIFO"}}
    )
    return {"name": name, "arn": f"{ARN}:scheduling-policy/{name}", **kind}


def queue(**fields: Any) -> dict[str, Any]:
    return {
        "jobQueueName": QUEUE,
        "jobQueueArn": f"{ARN}:job-queue/{QUEUE}",
        "state": "ENABLED",
        "status": "VALID",
        "priority": 1,
        "schedulingPolicyArn": POLICY_ARN,
        "serviceEnvironmentOrder": [{"order": 1, "serviceEnvironment": ENV_ARN}],
        "jobQueueType": "SAGEMAKER_TRAINING",
        **fields,
    }


def synced(wanted: SyncTarget, **overrides: Any) -> AwsState:
    """What AWS has once ``wanted`` was applied, with some parts replaced."""
    state: dict[str, Any] = {
        "environment": environment(dict(wanted.config.capacity)),
        "policy": policy(),
        "queue": queue(),
        "queue_policy": policy(),
        "shares": [aws_share(s) for s in wanted.config.shares],
        "jobs": [],
    }
    return AwsState(**{**state, **overrides})


def running(
    share: str, instances: float, unit: str = P4D, status: str = "RUNNING"
) -> dict[str, Any]:
    """A ListServiceJobs summary of a job holding ``instances`` of ``unit``."""
    return {
        "jobId": f"{share}-{instances}",
        "jobName": "train",
        "quotaShareName": share,
        "status": status,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "capacityUsage": [{"capacityUnit": unit, "quantity": instances}],
    }
