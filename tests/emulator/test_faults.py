"""Faults: throttling and 500s botocore retries, latency, and reproducible draws with a seed."""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError

from airflow_quota_provider.cli import main
from airflow_quota_provider.emulator import Emulator, EmulatorOptions
from airflow_quota_provider.emulator.faults import FaultOptions
from tests.emulator.conftest import (
    QUEUE,
    TWO_SHARES,
    Endpoint,
    list_all_jobs,
    serve,
    training_payload,
)


@contextmanager
def faulty(**faults: Any) -> Iterator[Endpoint]:
    yield from serve(TWO_SHARES, faults=FaultOptions(**faults))


def _submit(batch: Any, name: str) -> str:
    response = batch.submit_service_job(
        jobName=name,
        jobQueue=QUEUE,
        quotaShareName="nlp",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(training_payload(1)),
        tags={"emulator:duration-seconds": "60"},
        clientToken=f"token-{name}",
    )
    job_id: str = response["jobId"]
    return job_id


def test_every_job_is_accounted_for_through_throttling_and_server_errors() -> None:
    with faulty(throttle_rate=0.2, error_rate=0.05, seed=7) as endpoint:
        retrying = {"retries": {"mode": "standard", "total_max_attempts": 12}}
        batch = endpoint.client("batch", **retrying)
        # Concurrent clients, so botocore's backoff sleeps overlap and the test stays quick.
        with ThreadPoolExecutor(max_workers=10) as pool:
            submitted = list(pool.map(lambda n: _submit(batch, f"job-{n}"), range(20)))
        endpoint.advance(3600)  # control routes are never faulted
        jobs = list_all_jobs(batch)

        assert sorted(job["jobId"] for job in jobs) == sorted(submitted)
        assert {job["status"] for job in jobs} == {"SUCCEEDED"}
        submits = endpoint.stats()["operations"]["batch.SubmitServiceJob"]
        assert submits["ok"] == 20
        assert submits["TooManyRequestsException"] > 0
        refused = Counter[str]()
        for counts in endpoint.stats()["operations"].values():
            refused.update({code: n for code, n in counts.items() if code != "ok"})
        assert set(refused) == {"TooManyRequestsException", "ServerException"}


@pytest.mark.parametrize("mode", ["standard", "legacy"])
@pytest.mark.parametrize(
    ("faults", "service", "code", "status"),
    [
        ({"throttle_rate": 1.0}, "batch", "TooManyRequestsException", 429),
        ({"throttle_rate": 1.0}, "sagemaker", "ThrottlingException", 400),
        ({"error_rate": 1.0}, "batch", "ServerException", 500),
        ({"error_rate": 1.0}, "sagemaker", "InternalFailure", 500),
    ],
    ids=["batch throttled", "sagemaker throttled", "batch 500", "sagemaker 500"],
)
def test_botocore_retries_each_fault_and_a_refused_request_changes_nothing(
    faults: dict[str, float], service: str, code: str, status: int, mode: str
) -> None:
    with faulty(**faults) as endpoint:
        client = endpoint.client(service, retries={"mode": mode, "total_max_attempts": 2})
        with pytest.raises(ClientError) as raised:
            if service == "batch":
                _submit(client, "refused")
            else:
                client.create_training_job(**training_payload(1))
        response = raised.value.response
        assert (response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]) == (
            code,
            status,
        )
        assert response["ResponseMetadata"]["RetryAttempts"] == 1  # botocore retried it
        (counts,) = endpoint.stats()["operations"].values()
        assert counts == {code: 2}
        store = endpoint.emulator.world.store
        assert not store.jobs and not store.client_tokens and not store.training_jobs


def test_control_routes_are_never_faulted() -> None:
    with faulty(throttle_rate=0.5, error_rate=0.5, latency_ms=300) as endpoint:
        started = time.monotonic()
        for _ in range(10):
            assert endpoint.advance(1)["time_scale"] == 0
            assert "requests" in endpoint.stats()
        assert time.monotonic() - started < 1.0


def _outcomes(seed: int) -> list[str]:
    outcomes = []
    with faulty(throttle_rate=0.3, error_rate=0.2, seed=seed) as endpoint:
        batch = endpoint.client("batch", retries={"mode": "standard", "total_max_attempts": 1})
        for _ in range(30):
            try:
                batch.describe_job_queues()
                outcomes.append("ok")
            except ClientError as error:
                outcomes.append(error.response["Error"]["Code"])
    return outcomes


def test_a_seed_makes_the_faults_reproducible() -> None:
    first = _outcomes(seed=11)
    assert first == _outcomes(seed=11)
    assert first != _outcomes(seed=12)
    assert set(first) == {"ok", "TooManyRequestsException", "ServerException"}


def test_latency_delays_every_aws_answer() -> None:
    with faulty(latency_ms=150) as endpoint:
        started = time.monotonic()
        endpoint.batch.describe_job_queues()
        endpoint.sagemaker.list_training_jobs()
        elapsed = time.monotonic() - started
        assert 0.3 <= elapsed < 1.5
        started = time.monotonic()
        with urllib.request.urlopen(f"{endpoint.url}/_emulator/clock") as response:
            response.read()
        assert time.monotonic() - started < 0.15


def test_invalid_fault_options_are_refused() -> None:
    with pytest.raises(ValueError, match=r"--throttle-rate must be from 0 to 1, got 1\.5"):
        Emulator(EmulatorOptions(faults=FaultOptions(throttle_rate=1.5)))
    problems = FaultOptions(throttle_rate=0.6, error_rate=0.6, capacity_error_rate=1).problems()
    assert problems == [
        "--throttle-rate and --error-rate add up to more than 1",
        "--capacity-error-rate must be from 0 to below 1, got 1",
    ]


def test_the_command_refuses_bad_fault_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulator", "--throttle-rate", "2", "--capacity-error-rate", "1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "--throttle-rate must be from 0 to 1, got 2",
        "--throttle-rate and --error-rate add up to more than 1",
        "--capacity-error-rate must be from 0 to below 1, got 1",
    ]
