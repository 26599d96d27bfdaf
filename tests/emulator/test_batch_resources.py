"""Service environments, scheduling policies, job queues, quota shares and tags over boto3."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.emulator.conftest import G5, P4D, QUEUE, Endpoint, create_queue, create_share

ARN = "arn:aws:batch:us-east-1:123456789012"


def _refused(call: Callable[..., Any], **params: Any) -> str:
    with pytest.raises(ClientError) as raised:
        call(**params)
    assert raised.value.response["Error"]["Code"] == "ClientException"
    message: str = raised.value.response["Error"]["Message"]
    return message


def test_config_creates_environment_policy_queue_and_shares(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    environment = batch.describe_service_environments()["serviceEnvironments"]
    assert environment == [
        {
            "serviceEnvironmentName": f"{QUEUE}-env",
            "serviceEnvironmentArn": f"{ARN}:service-environment/{QUEUE}-env",
            "serviceEnvironmentType": "SAGEMAKER_TRAINING",
            "state": "ENABLED",
            "status": "VALID",
            "capacityLimits": [
                {"capacityUnit": G5, "maxCapacity": 4},
                {"capacityUnit": P4D, "maxCapacity": 4},
            ],
        }
    ]
    queue = batch.describe_job_queues(jobQueues=[QUEUE])["jobQueues"][0]
    assert queue["schedulingPolicyArn"] == f"{ARN}:scheduling-policy/{QUEUE}-policy"
    assert queue["serviceEnvironmentOrder"] == [
        {"order": 1, "serviceEnvironment": environment[0]["serviceEnvironmentArn"]}
    ]
    shares = batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"]
    assert [s["quotaShareName"] for s in shares] == ["nlp", "vision"]


def test_create_describe_update_delete_a_quota_share(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    queue = create_queue(batch)
    arn = create_share(batch, "nlp", 4, borrowLimit=50)
    assert arn == f"{queue}/quota-share/nlp"
    batch.tag_resource(resourceArn=arn, tags={"team": "nlp"})
    described = batch.describe_quota_share(quotaShareArn=arn)
    del described["ResponseMetadata"]
    assert described == {
        "quotaShareName": "nlp",
        "quotaShareArn": arn,
        "jobQueueArn": queue,
        "capacityLimits": [{"capacityUnit": P4D, "maxCapacity": 4}],
        "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": 50},
        "preemptionConfiguration": {"inSharePreemption": "DISABLED"},
        "state": "ENABLED",
        "status": "VALID",
        "tags": {"team": "nlp"},
    }
    batch.update_quota_share(quotaShareArn=arn, state="DISABLED")
    assert batch.describe_quota_share(quotaShareArn=arn)["state"] == "DISABLED"
    batch.delete_quota_share(quotaShareArn=arn)
    assert batch.list_quota_shares(jobQueue="queue")["quotaShares"] == []
    assert (
        _refused(batch.describe_quota_share, quotaShareArn=arn)
        == f"quota share {arn} does not exist"
    )


def test_quota_share_rules(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    create_queue(batch)
    create_share(batch, "nlp", 6)
    assert _refused(create_share, batch=batch, name="nlp", count=1) == (
        "quota share nlp already exists in job queue queue"
    )
    assert _refused(create_share, batch=batch, name="vision", count=3) == (
        f"quota shares of job queue queue would own 9 {P4D}; its service environments have 8"
    )
    assert _refused(
        create_share, batch=batch, name="eval", count=1, strategy="RESERVE", borrowLimit=10
    ) == ("borrowLimit applies only to LEND_AND_BORROW, not RESERVE")
    assert _refused(create_share, batch=batch, name="bad name!", count=1).startswith(
        "quotaShareName 'bad name!' is invalid"
    )
    message = _refused(
        batch.create_quota_share,
        quotaShareName="g5",
        jobQueue="queue",
        capacityLimits=[{"capacityUnit": G5, "maxCapacity": 1}],
        resourceSharingConfiguration={"strategy": "LEND"},
        preemptionConfiguration={"inSharePreemption": "DISABLED"},
    )
    assert message == (
        f"capacityUnit {G5} is not in job queue queue's service environments (they have {P4D})"
    )


def test_at_most_twenty_shares_per_queue(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    create_queue(batch, capacity=20)
    for index in range(20):
        create_share(batch, f"s{index}", 1)
    assert _refused(create_share, batch=batch, name="s20", count=0) == (
        "job queue queue already has 20 quota shares, the most allowed"
    )
    listed = batch.list_quota_shares(jobQueue="queue", maxResults=15)
    rest = batch.list_quota_shares(jobQueue="queue", nextToken=listed["nextToken"])
    names = [s["quotaShareName"] for s in listed["quotaShares"] + rest["quotaShares"]]
    assert names == sorted(f"s{index}" for index in range(20))
    assert "nextToken" not in rest


def test_job_queue_rules(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    create_queue(batch)
    assert (
        _refused(
            batch.create_job_queue,
            jobQueueName="queue",
            priority=1,
            jobQueueType="SAGEMAKER_TRAINING",
            serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "env"}],
        )
        == "job queue queue already exists"
    )
    assert (
        _refused(
            batch.create_job_queue,
            jobQueueName="q2",
            priority=1,
            jobQueueType="SAGEMAKER_TRAINING",
            serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "missing"}],
        )
        == "service environment missing does not exist"
    )
    assert _refused(
        batch.create_job_queue,
        jobQueueName="q3",
        priority=1,
        jobQueueType="ECS",
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": "ce"}],
    ).startswith("jobQueueType ECS is not supported here")
    assert _refused(batch.delete_job_queue, jobQueue="queue") == (
        "job queue queue must be DISABLED before it is deleted"
    )
    batch.update_job_queue(jobQueue="queue", state="DISABLED", priority=5)
    queue = batch.describe_job_queues(jobQueues=["queue"])["jobQueues"][0]
    assert (queue["state"], queue["priority"]) == ("DISABLED", 5)
    batch.delete_job_queue(jobQueue="queue")
    assert batch.describe_job_queues()["jobQueues"] == []


def test_environment_and_policy_lifecycle(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    create_queue(batch)
    assert _refused(batch.delete_service_environment, serviceEnvironment="env") == (
        "service environment env must be DISABLED before it is deleted"
    )
    batch.update_service_environment(serviceEnvironment="env", state="DISABLED")
    assert _refused(batch.delete_service_environment, serviceEnvironment="env") == (
        "service environment env is used by job queues queue"
    )
    policy = f"{ARN}:scheduling-policy/policy"
    assert batch.list_scheduling_policies()["schedulingPolicies"] == [{"arn": policy}]
    described = batch.describe_scheduling_policies(arns=[policy])["schedulingPolicies"]
    assert described[0]["quotaSharePolicy"] == {"idleResourceAssignmentStrategy": "FIFO"}
    assert (
        _refused(
            batch.update_scheduling_policy, arn=policy, fairsharePolicy={"shareDecaySeconds": 60}
        )
        == "scheduling policy policy has a quotaSharePolicy and cannot become fair-share"
    )
    assert _refused(batch.delete_scheduling_policy, arn=policy) == (
        "scheduling policy policy is used by job queues queue"
    )


def test_tags_on_every_resource(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    queue = f"{ARN}:job-queue/{QUEUE}"
    batch.tag_resource(resourceArn=queue, tags={"a": "1", "b": "2"})
    batch.untag_resource(resourceArn=queue, tagKeys=["a"])
    assert batch.list_tags_for_resource(resourceArn=queue)["tags"] == {"b": "2"}
    assert batch.describe_job_queues()["jobQueues"][0]["tags"] == {"b": "2"}
    assert _refused(batch.list_tags_for_resource, resourceArn=f"{ARN}:job-queue/x") == (
        f"resource {ARN}:job-queue/x does not exist"
    )
