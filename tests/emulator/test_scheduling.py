"""How the quota engine's decisions show in Batch: in-share preemption, lowered capacity,
retries, timeouts, payloads SageMaker refuses, and a queue without quota shares."""

from __future__ import annotations

import json

from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from tests.emulator.conftest import P4D, QUEUE, Endpoint, serve, status, submit, training_payload

IN_SHARE = QueueConfig(
    job_queue=QUEUE,
    capacity={P4D: 4},
    shares=(Share("nlp", {P4D: 4}, Sharing.RESERVE, in_share_preemption=True),),
)


def test_a_higher_priority_job_preempts_in_its_share() -> None:
    for endpoint in serve(IN_SHARE):
        batch = endpoint.batch
        low = submit(batch, "nlp", 4, schedulingPriority=1, duration=3600)
        endpoint.advance(10)
        urgent = submit(batch, "nlp", 4, schedulingPriority=90)
        endpoint.advance(1)
        described = batch.describe_service_job(jobId=low)
        assert described["statusReason"] == (
            "PREEMPTION_IN_PROGRESS: In-share preemption triggered by a higher priority job"
        )
        endpoint.advance(2)
        assert (status(batch, low), status(batch, urgent)) == ("RUNNABLE", "SCHEDULED")


def test_lowering_a_share_makes_its_jobs_preemptible(endpoint: Endpoint) -> None:
    """Lowering a share does not stop its jobs by itself; the next job that needs the
    capacity preempts them (CAPACITY_REDUCED), and one that no longer fits fails."""
    batch = endpoint.batch
    job = submit(batch, "nlp", 4, duration=3600)  # 2 own, 2 borrowed from vision
    endpoint.advance(10)
    share = batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"][0]
    batch.update_quota_share(
        quotaShareArn=share["quotaShareArn"],
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 1}],
        resourceSharingConfiguration={"strategy": "RESERVE"},
    )
    endpoint.advance(0)
    assert status(batch, job) == "RUNNING"
    owner = submit(batch, "vision", 2)
    endpoint.advance(1)
    described = batch.describe_service_job(jobId=job)
    assert described["statusReason"] == (
        "PREEMPTION_IN_PROGRESS: Preemption triggered because the quota share's capacity "
        "limits were lowered"
    )
    endpoint.advance(2)
    described = batch.describe_service_job(jobId=job)
    assert described["status"] == "FAILED"
    assert described["statusReason"].startswith(f"NO_LONGER_FITS: the job needs 4 {P4D}")
    assert status(batch, owner) == "SCHEDULED"


def test_a_failed_attempt_is_retried_while_attempts_remain(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    job = submit(
        batch,
        "nlp",
        tags={"emulator:fail-after-seconds": "5"},
        retryStrategy={"attempts": 2},
    )
    endpoint.advance(1 + 4 + 2 + 5)
    described = batch.describe_service_job(jobId=job)
    assert described["status"] == "SCHEDULED"  # requeued and started again at once
    assert described["attempts"][0]["statusReason"].startswith(
        "Received status from SageMaker: AlgorithmError: emulated failure after 5 seconds"
    )
    endpoint.advance(4 + 2 + 5)
    described = batch.describe_service_job(jobId=job)
    assert described["status"] == "FAILED"
    assert len(described["attempts"]) == 2


def test_evaluate_on_exit_can_stop_retries(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    job = submit(
        batch,
        "nlp",
        tags={"emulator:fail-after-seconds": "5"},
        retryStrategy={
            "attempts": 5,
            "evaluateOnExit": [{"onStatusReason": "*AlgorithmError*", "action": "EXIT"}],
        },
    )
    endpoint.advance(1 + 4 + 2 + 5)
    described = batch.describe_service_job(jobId=job)
    assert (described["status"], len(described["attempts"])) == ("FAILED", 1)


def test_an_attempt_longer_than_its_timeout_is_stopped(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    job = submit(batch, "nlp", duration=3600, timeoutConfig={"attemptDurationSeconds": 60})
    endpoint.advance(1 + 60 + 2)
    described = batch.describe_service_job(jobId=job)
    assert described["status"] == "FAILED"
    assert described["statusReason"] == "Job attempt duration exceeded timeout (60 seconds)"


def test_a_payload_sagemaker_refuses_fails_the_job_when_dispatched(endpoint: Endpoint) -> None:
    """Batch passes the payload through unchecked; SageMaker's validation fails the job."""
    payload = training_payload()
    del payload["RoleArn"]
    job = submit(endpoint.batch, "nlp", payload=payload)
    assert status(endpoint.batch, job) == "SUBMITTED"
    endpoint.advance(1)
    described = endpoint.batch.describe_service_job(jobId=job)
    assert described["status"] == "FAILED"
    assert described["statusReason"] == (
        "ValidationException: 1 validation error detected: Value null at 'RoleArn' failed "
        "to satisfy constraint: Member must not be null"
    )


def test_service_job_tags_reach_the_training_job_and_win(endpoint: Endpoint) -> None:
    payload = training_payload(Tags=[{"Key": "emulator:duration-seconds", "Value": "1000"}])
    job = submit(endpoint.batch, "nlp", payload=payload, duration=30)
    endpoint.advance(1)
    attempt = endpoint.batch.describe_service_job(jobId=job)["latestAttempt"]
    name = attempt["serviceResourceId"]["value"].rsplit("/", 1)[1]
    summary = endpoint.sagemaker.list_training_jobs(NameContains=name)["TrainingJobSummaries"][0]
    assert summary["TrainingJobName"].startswith("AWSBatchtrain")
    endpoint.advance(4 + 2 + 30 + 2)  # the service job's 30 s, not the payload's 1000 s
    assert status(endpoint.batch, job) == "SUCCEEDED"


def test_a_queue_without_quota_shares_dispatches_by_priority(bare_endpoint: Endpoint) -> None:
    batch = bare_endpoint.batch
    batch.create_service_environment(
        serviceEnvironmentName="env",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 1}],
    )
    batch.create_job_queue(
        jobQueueName="plain",
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "env"}],
    )

    def submit_plain(priority: int) -> str:
        response = batch.submit_service_job(
            jobName=f"p{priority}",
            jobQueue="plain",
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(training_payload()),
            schedulingPriority=priority,
        )
        job_id: str = response["jobId"]
        return job_id

    low, high = submit_plain(1), submit_plain(9)
    bare_endpoint.advance(1)
    assert (status(batch, high), status(batch, low)) == ("SCHEDULED", "RUNNABLE")
    assert "quotaShareName" not in batch.describe_service_job(jobId=high)


def test_a_disabled_environment_starts_no_jobs(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    batch.update_service_environment(serviceEnvironment=f"{QUEUE}-env", state="DISABLED")
    job = submit(batch, "nlp")
    endpoint.advance(10)
    described = batch.describe_service_job(jobId=job)
    assert (described["status"], described["statusReason"]) == (
        "RUNNABLE",
        "SERVICE_ENVIRONMENT_DISABLED: no service environment of job queue ml-training is "
        "ENABLED; jobs wait until one is",
    )
    batch.update_service_environment(serviceEnvironment=f"{QUEUE}-env", state="ENABLED")
    endpoint.advance(0)
    assert status(batch, job) == "SCHEDULED"
