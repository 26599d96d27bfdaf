"""BatchQuotaHook creates, updates, describes and lists the quota resources over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from airflow_quota_provider.core.model import Share, Sharing
from airflow_quota_provider.emulator.bootstrap import share_request
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from tests.emulator.conftest import P4D, Endpoint, serve


@pytest.fixture
def bare(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    for found in serve(None):
        monkeypatch.setenv("AWS_ENDPOINT_URL", found.url)
        yield found


def test_a_queue_with_a_share_is_built_and_changed_through_the_hook(bare: Endpoint) -> None:
    hook = BatchQuotaHook(aws_conn_id=None)
    environment = hook.create_service_environment(
        serviceEnvironmentName="gpu-env",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 8}],
    )
    policy = hook.create_scheduling_policy(
        name="gpu-policy", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )
    queue = hook.create_job_queue(
        jobQueueName="gpu",
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        schedulingPolicyArn=policy["arn"],
        serviceEnvironmentOrder=[
            {"order": 1, "serviceEnvironment": environment["serviceEnvironmentArn"]}
        ],
    )
    share = hook.create_quota_share(
        **share_request(queue["jobQueueArn"], Share("nlp", {P4D: 4}, Sharing.LEND))
    )
    hook.update_service_environment(
        serviceEnvironment="gpu-env", capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 12}]
    )
    hook.update_quota_share(
        quotaShareArn=share["quotaShareArn"],
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 6}],
    )
    hook.update_job_queue(jobQueue="gpu", priority=5)

    assert [q["jobQueueName"] for q in hook.list_job_queues()] == ["gpu"]
    assert hook.describe_job_queue("gpu")["priority"] == 5
    assert hook.list_scheduling_policies() == [{"arn": policy["arn"]}]
    (described,) = hook.describe_scheduling_policies(policy["arn"])
    assert described["quotaSharePolicy"] == {"idleResourceAssignmentStrategy": "FIFO"}
    config = hook.queue_config("gpu")
    assert config.capacity == {P4D: 12}
    nlp = config.share("nlp")
    assert nlp is not None
    assert nlp.capacity == {P4D: 6}


def test_aws_errors_reach_the_caller_unchanged(bare: Endpoint) -> None:
    hook = BatchQuotaHook(aws_conn_id=None)
    with pytest.raises(ClientError) as raised:
        hook.update_job_queue(jobQueue="missing", priority=5)
    assert raised.value.response["Error"]["Code"] == "ClientException"
    with pytest.raises(ValueError, match="job queue missing does not exist"):
        hook.describe_job_queue("missing")
