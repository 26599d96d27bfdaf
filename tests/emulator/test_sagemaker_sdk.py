"""The SageMaker Python SDK's AWS Batch helpers against the endpoint.

``sagemaker.train.aws_batch.TrainingQueuedJob`` keeps the job's ARN (from
SubmitServiceJob or ListServiceJobs) and passes it as ``jobId`` to
DescribeServiceJob, UpdateServiceJob and TerminateServiceJob. The helpers make
their own ``boto3.client("batch")``, so the endpoint is given to them the way
boto3 takes it from the environment.
"""

from __future__ import annotations

import boto3
import pytest

from tests.emulator.conftest import QUEUE, Endpoint, status, submit

training_queue = pytest.importorskip(
    "sagemaker.train.aws_batch.training_queue",
    reason="needs the PyPI package sagemaker-train (module sagemaker.train.aws_batch), "
    "in the project's test extra",
)


@pytest.fixture
def sdk_environment(endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch) -> Endpoint:
    """Point every ``boto3.client("batch")`` of this process at the endpoint."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BATCH", endpoint.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    return endpoint


def test_a_queued_job_is_described_updated_and_terminated_by_its_arn(
    sdk_environment: Endpoint,
) -> None:
    endpoint = sdk_environment
    blocker = submit(endpoint.batch, "nlp", 4, name="blocker", duration=100)
    job_id = submit(endpoint.batch, "nlp", 1, name="sdk-job")
    endpoint.advance(1)

    queued = training_queue.TrainingQueue(QUEUE).get_job("sdk-job")
    assert queued.job_arn == f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}"

    described = queued.describe()
    assert (described["jobId"], described["status"]) == (job_id, "RUNNABLE")
    updated = queued.update(scheduling_priority=42)
    assert (updated["jobId"], updated["jobArn"]) == (job_id, queued.job_arn)
    assert queued.describe()["schedulingPriority"] == 42
    queued.terminate(reason="no longer needed")
    described = queued.describe()
    assert (described["status"], described["statusReason"]) == ("FAILED", "no longer needed")
    assert status(endpoint.batch, blocker) == "SCHEDULED"
