"""Integer members past 32 bits, refused as AWS's front door refuses them.

botocore's ``integer`` shape is a 32-bit int and its client sends any Python
int, so the endpoint checks the range: -2147483648 to 2147483647, narrowed by
the model's own ``min``/``max`` where it has them. The answer is the service's
validation error (Batch ``ClientException``, SageMaker ``ValidationException``).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.emulator.conftest import P4D, QUEUE, Endpoint, status, submit, training_payload

TOO_BIG = 2**31
LARGEST = 2**31 - 1


def _refused(call: Any, code: str = "ClientException", **params: Any) -> str:
    with pytest.raises(ClientError) as raised:
        call(**params)
    error = raised.value.response["Error"]
    assert (error["Code"], raised.value.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        code,
        400,
    )
    message: str = error["Message"]
    return message


def _too_big(path: str, value: int = TOO_BIG) -> str:
    return (
        f"1 validation error detected: Value '{value}' at '{path}' failed to satisfy "
        "constraint: Member must have value less than or equal to 2147483647"
    )


def _share(**changes: Any) -> dict[str, Any]:
    return {
        "quotaShareName": "big",
        "jobQueue": QUEUE,
        "capacityLimits": [{"capacityUnit": P4D, "maxCapacity": 0}],
        "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": 10},
        "preemptionConfiguration": {"inSharePreemption": "DISABLED"},
        **changes,
    }


def test_quota_share_capacity_and_borrow_limit(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    capacity = [{"capacityUnit": P4D, "maxCapacity": TOO_BIG}]
    assert _refused(batch.create_quota_share, **_share(capacityLimits=capacity)) == _too_big(
        "capacityLimits.1.maxCapacity"
    )
    sharing = {"strategy": "LEND_AND_BORROW", "borrowLimit": 10**12}
    assert _refused(
        batch.create_quota_share, **_share(resourceSharingConfiguration=sharing)
    ) == _too_big("resourceSharingConfiguration.borrowLimit", 10**12)
    below = {"strategy": "LEND_AND_BORROW", "borrowLimit": -(2**31) - 1}
    assert _refused(batch.create_quota_share, **_share(resourceSharingConfiguration=below)) == (
        "1 validation error detected: Value '-2147483649' at "
        "'resourceSharingConfiguration.borrowLimit' failed to satisfy constraint: "
        "Member must have value greater than or equal to -2147483648"
    )
    nlp = f"arn:aws:batch:us-east-1:123456789012:job-queue/{QUEUE}/quota-share/nlp"
    update: dict[str, Any] = {"quotaShareArn": nlp, "capacityLimits": capacity}
    assert _refused(batch.update_quota_share, **update) == _too_big("capacityLimits.1.maxCapacity")
    assert [
        s["quotaShareName"] for s in batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"]
    ] == [
        "nlp",
        "vision",
    ]


def test_the_largest_32_bit_borrow_limit_is_taken(endpoint: Endpoint) -> None:
    sharing = {"strategy": "LEND_AND_BORROW", "borrowLimit": LARGEST}
    endpoint.batch.create_quota_share(**_share(resourceSharingConfiguration=sharing))
    share = endpoint.batch.describe_quota_share(
        quotaShareArn=f"arn:aws:batch:us-east-1:123456789012:job-queue/{QUEUE}/quota-share/big"
    )
    assert share["resourceSharingConfiguration"]["borrowLimit"] == LARGEST


def test_environment_capacity_and_queue_priority(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    assert _refused(
        batch.create_service_environment,
        serviceEnvironmentName="env",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": TOO_BIG}],
    ) == _too_big("capacityLimits.1.maxCapacity")
    assert _refused(
        batch.create_job_queue,
        jobQueueName="queue",
        jobQueueType="SAGEMAKER_TRAINING",
        priority=TOO_BIG,
        serviceEnvironmentOrder=[{"order": TOO_BIG, "serviceEnvironment": "env"}],
    ) == (
        "2 validation errors detected: Value '2147483648' at 'priority' failed to satisfy "
        "constraint: Member must have value less than or equal to 2147483647; Value "
        "'2147483648' at 'serviceEnvironmentOrder.1.order' failed to satisfy constraint: "
        "Member must have value less than or equal to 2147483647"
    )
    assert batch.describe_service_environments()["serviceEnvironments"] == []


def test_service_job_numbers(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    base = {
        "jobName": "job",
        "jobQueue": QUEUE,
        "quotaShareName": "nlp",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": "{}",
    }
    assert _refused(
        batch.submit_service_job,
        **base,
        schedulingPriority=TOO_BIG,
        timeoutConfig={"attemptDurationSeconds": TOO_BIG},
        preemptionConfiguration={"preemptionRetriesBeforeTermination": TOO_BIG},
    ) == (
        "3 validation errors detected: "
        + "; ".join(
            _too_big(path).split(": ", 1)[1]
            for path in (
                "schedulingPriority",
                "timeoutConfig.attemptDurationSeconds",
                "preemptionConfiguration.preemptionRetriesBeforeTermination",
            )
        )
    )
    job_id = submit(batch, "nlp", 1)
    assert _refused(batch.update_service_job, jobId=job_id, schedulingPriority=TOO_BIG) == _too_big(
        "schedulingPriority"
    )
    assert status(batch, job_id) == "SUBMITTED"


def test_a_training_job_instance_count(endpoint: Endpoint) -> None:
    payload = training_payload()
    payload["ResourceConfig"]["InstanceCount"] = TOO_BIG
    message = _refused(endpoint.sagemaker.create_training_job, "ValidationException", **payload)
    assert message == _too_big("ResourceConfig.InstanceCount")
