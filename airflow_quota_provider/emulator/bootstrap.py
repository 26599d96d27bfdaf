"""``--config quota.yaml``: the Batch resources one quota config describes, created at start.

For job queue ``ml-training`` it creates the service environment
``ml-training-env`` (the queue's capacity), the scheduling policy
``ml-training-policy`` (``quotaSharePolicy`` FIFO), the job queue and one quota
share per share, through the same operations a client would call, so the
same rules apply. Settings AWS has no field for are kept on the queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.core.model import UNLIMITED_BORROW, QueueConfig, Share, Sharing
from airflow_quota_provider.emulator.service_model import BATCH

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.emulator import Emulator


def apply_config(emulator: Emulator, config: QueueConfig) -> str:
    """Create ``config``'s resources; returns the job queue's ARN."""
    name = config.job_queue
    environment = emulator.call(
        BATCH,
        "CreateServiceEnvironment",
        {
            "serviceEnvironmentName": f"{name}-env",
            "serviceEnvironmentType": "SAGEMAKER_TRAINING",
            "capacityLimits": [
                {"capacityUnit": unit, "maxCapacity": count}
                for unit, count in sorted(config.capacity.items())
            ],
        },
    )
    policy = emulator.call(
        BATCH,
        "CreateSchedulingPolicy",
        {"name": f"{name}-policy", "quotaSharePolicy": {"idleResourceAssignmentStrategy": "FIFO"}},
    )
    queue = emulator.call(
        BATCH,
        "CreateJobQueue",
        {
            "jobQueueName": name,
            "jobQueueType": "SAGEMAKER_TRAINING",
            "priority": 1,
            "schedulingPolicyArn": policy["arn"],
            "serviceEnvironmentOrder": [
                {"order": 1, "serviceEnvironment": environment["serviceEnvironmentArn"]}
            ],
        },
    )
    queue_arn: str = queue["jobQueueArn"]
    with emulator.lock:
        emulator.world.store.queues[queue_arn].extensions = config
        emulator.save()
    for share in config.shares:
        emulator.call(BATCH, "CreateQuotaShare", share_request(queue_arn, share))
    return queue_arn


def share_request(queue_arn: str, share: Share) -> dict[str, Any]:
    sharing: dict[str, Any] = {"strategy": share.sharing.value}
    if share.sharing is Sharing.LEND_AND_BORROW and share.borrow_limit != UNLIMITED_BORROW:
        sharing["borrowLimit"] = share.borrow_limit
    return {
        "quotaShareName": share.name,
        "jobQueue": queue_arn,
        "capacityLimits": [
            {"capacityUnit": unit, "maxCapacity": count}
            for unit, count in sorted(share.capacity.items())
        ],
        "resourceSharingConfiguration": sharing,
        "preemptionConfiguration": {
            "inSharePreemption": "ENABLED" if share.in_share_preemption else "DISABLED"
        },
        "state": share.state.value,
    }
