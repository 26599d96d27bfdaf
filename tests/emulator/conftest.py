"""Fixtures: an emulator served over real HTTP in this process, and boto3 clients for it.

Time stands still (``time_scale=0``) unless a test moves it with
``endpoint.advance(seconds)``, which goes through ``POST /_emulator/clock``,
so every status a test reads is exact.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config

from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from airflow_quota_provider.emulator import Emulator, EmulatorOptions, EmulatorServer
from airflow_quota_provider.emulator.bootstrap import apply_config

P4D = "ml.p4d.24xlarge"
G5 = "ml.g5.12xlarge"
QUEUE = "ml-training"

TWO_SHARES = QueueConfig(
    job_queue=QUEUE,
    capacity={P4D: 4, G5: 4},
    shares=(
        Share("nlp", {P4D: 2}, Sharing.LEND_AND_BORROW),
        Share("vision", {P4D: 2, G5: 4}, Sharing.LEND_AND_BORROW),
    ),
)
"""Two shares of 2 p4d each; either may borrow the other's idle p4d."""


@dataclass
class Endpoint:
    url: str
    emulator: Emulator
    batch: Any
    sagemaker: Any

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move emulated time forward through the control route."""
        data = json.dumps({"advance_seconds": seconds}).encode()
        request = urllib.request.Request(f"{self.url}/_emulator/clock", data=data, method="POST")
        with urllib.request.urlopen(request) as response:
            result: dict[str, Any] = json.load(response)
        return result

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/_emulator/stats") as response:
            result: dict[str, Any] = json.load(response)
        return result

    def client(self, service: str, **config: Any) -> Any:
        return make_client(self.url, service, **config)


def make_client(url: str, service: str, **config: Any) -> Any:
    # boto3-stubs types only literal service names; this one is the caller's
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(**{"retries": {"max_attempts": 1}, **config}),
    )


def serve(config: QueueConfig | None, **options: Any) -> Generator[Endpoint]:
    emulator = Emulator(EmulatorOptions(**{"time_scale": 0.0, **options}))
    if config is not None:
        apply_config(emulator, config)
    with EmulatorServer(emulator) as server:
        yield Endpoint(
            server.url,
            emulator,
            make_client(server.url, "batch"),
            make_client(server.url, "sagemaker"),
        )


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    """An emulator with :data:`TWO_SHARES` set up, time stopped."""
    yield from serve(TWO_SHARES)


@pytest.fixture
def bare_endpoint() -> Iterator[Endpoint]:
    """An emulator with no resources, time stopped."""
    yield from serve(None)


def training_payload(instances: int = 1, instance_type: str = P4D, **extra: Any) -> dict[str, Any]:
    """A minimal valid CreateTrainingJob request."""
    return {
        "TrainingJobName": "train",
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "image:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {
            "InstanceType": instance_type,
            "InstanceCount": instances,
            "VolumeSizeInGB": 50,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        **extra,
    }


def submit(
    batch: Any,
    share: str,
    instances: int = 1,
    *,
    name: str = "job",
    duration: float = 60,
    payload: dict[str, Any] | None = None,
    **extra: Any,
) -> str:
    """Submit a service job to :data:`QUEUE`; returns its id."""
    tags = {"emulator:duration-seconds": str(duration), **extra.pop("tags", {})}
    response = batch.submit_service_job(
        jobName=name,
        jobQueue=QUEUE,
        quotaShareName=share,
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(payload or training_payload(instances)),
        tags=tags,
        **extra,
    )
    job_id: str = response["jobId"]
    return job_id


def create_queue(batch: Any, capacity: int = 8) -> str:
    """Service environment ``env`` of ``capacity`` p4d, policy ``policy``, quota-managed job
    queue ``queue``, over the API; returns the queue's ARN."""
    batch.create_service_environment(
        serviceEnvironmentName="env",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": capacity}],
    )
    policy = batch.create_scheduling_policy(
        name="policy", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )
    queue = batch.create_job_queue(
        jobQueueName="queue",
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        schedulingPolicyArn=policy["arn"],
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "env"}],
    )
    arn: str = queue["jobQueueArn"]
    return arn


def create_share(
    batch: Any, name: str, count: int, strategy: str = "LEND_AND_BORROW", **extra: Any
) -> str:
    """Quota share ``name`` of ``count`` p4d in :func:`create_queue`'s queue; returns its ARN."""
    response = batch.create_quota_share(
        quotaShareName=name,
        jobQueue="queue",
        capacityLimits=[{"capacityUnit": P4D, "maxCapacity": count}],
        resourceSharingConfiguration={"strategy": strategy, **extra},
        preemptionConfiguration={"inSharePreemption": "DISABLED"},
    )
    arn: str = response["quotaShareArn"]
    return arn


def status(batch: Any, job_id: str) -> str:
    result: str = batch.describe_service_job(jobId=job_id)["status"]
    return result


STATUSES = (
    "SUBMITTED",
    "PENDING",
    "RUNNABLE",
    "SCHEDULED",
    "STARTING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
)


def list_all_jobs(batch: Any, queue: str = QUEUE) -> list[dict[str, Any]]:
    """Every job summary of ``queue``, status by status, following ``nextToken``."""
    found: list[dict[str, Any]] = []
    for job_status in STATUSES:
        params: dict[str, Any] = {"jobQueue": queue, "jobStatus": job_status, "maxResults": 100}
        while True:
            page = batch.list_service_jobs(**params)
            found.extend(page["jobSummaryList"])
            if not page.get("nextToken"):
                break
            params["nextToken"] = page["nextToken"]
    return found
