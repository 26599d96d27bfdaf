"""``--capacity-error-rate``: SageMaker has no capacity; the job goes back to RUNNABLE."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow_quota_provider.emulator.faults import CAPACITY_ERROR, FaultOptions
from tests.emulator.conftest import TWO_SHARES, Endpoint, list_all_jobs, serve, status, submit

NO_CAPACITY = f"Received status from SageMaker: {CAPACITY_ERROR}"


@contextmanager
def short_of_capacity(seed: int) -> Iterator[Endpoint]:
    yield from serve(TWO_SHARES, faults=FaultOptions(capacity_error_rate=0.5, seed=seed))


def _attempts(endpoint: Endpoint, job_id: str) -> list[dict[str, Any]]:
    job = endpoint.batch.describe_service_job(jobId=job_id)
    attempts: list[dict[str, Any]] = job.get("attempts", [])
    return attempts


def _training_job_name(endpoint: Endpoint, arn: str) -> str:
    summaries = endpoint.sagemaker.list_training_jobs(MaxResults=100)["TrainingJobSummaries"]
    name: str = next(t["TrainingJobName"] for t in summaries if t["TrainingJobArn"] == arn)
    return name


def test_a_job_without_capacity_goes_back_to_runnable_and_succeeds_later() -> None:
    with short_of_capacity(seed=3) as endpoint:
        # One attempt allowed: capacity errors must not count as failed attempts.
        jobs = [
            submit(endpoint.batch, "nlp", name=f"job-{n}", retryStrategy={"attempts": 1})
            for n in range(8)
        ]
        endpoint.advance(1 + 4)  # queued, then the end of Starting: some find no capacity
        started = [job for job in jobs if _attempts(endpoint, job)]
        unlucky = [job for job in started if _attempts(endpoint, job)[0].get("statusReason")]
        assert unlucky, "seed 3 gives some capacity errors"
        for job in unlucky:
            first = _attempts(endpoint, job)[0]
            assert first["statusReason"] == NO_CAPACITY
            training = endpoint.sagemaker.describe_training_job(
                TrainingJobName=_training_job_name(endpoint, first["serviceResourceId"]["value"])
            )
            assert (training["TrainingJobStatus"], training["FailureReason"]) == (
                "Failed",
                CAPACITY_ERROR,
            )
            assert status(endpoint.batch, job) in ("RUNNABLE", "SCHEDULED")

        endpoint.advance(3600)
        summaries = list_all_jobs(endpoint.batch)
        assert sorted(s["jobId"] for s in summaries) == sorted(jobs)
        assert {s["status"] for s in summaries} == {"SUCCEEDED"}
        for job in jobs:
            *retried, last = _attempts(endpoint, job)
            assert {a["statusReason"] for a in retried} <= {NO_CAPACITY}
            assert last["statusReason"] == "Received status from SageMaker: Training job completed"


def _attempt_counts(seed: int) -> list[int]:
    with short_of_capacity(seed) as endpoint:
        jobs = [submit(endpoint.batch, "vision", name=f"job-{n}") for n in range(6)]
        endpoint.advance(3600)
        return [len(_attempts(endpoint, job)) for job in jobs]


def test_a_seed_makes_capacity_errors_reproducible() -> None:
    counts = _attempt_counts(seed=5)
    assert counts == _attempt_counts(seed=5)
    assert sum(counts) > len(counts)
