"""After N failed polls a trigger fires an ``error`` event, and its task fails (PollingFailed)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_quota_provider.emulator.faults import FaultOptions, Faults
from airflow_quota_provider.triggers.batch import ServiceJobTrigger
from tests.airflow.conftest import TaskLog, once
from tests.airflow.test_operator import run_task
from tests.emulator.conftest import TWO_SHARES, Endpoint, serve

FAST = {"poll_interval": 0.01, "aws_conn_id": None, "region_name": "us-east-1"}


def follow(job_id: str, **options: Any) -> dict[str, Any]:
    trigger = ServiceJobTrigger(job_id=job_id, job_queue="ml-training", **{**FAST, **options})

    async def collect() -> list[Any]:
        return [event async for event in trigger.run()]

    (event,) = asyncio.run(collect())
    payload: dict[str, Any] = event.payload
    return payload


@pytest.fixture
def failing_endpoint(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """Every AWS request answered with a 500 (Batch ServerException)."""
    for found in serve(TWO_SHARES, faults=FaultOptions(error_rate=1.0)):
        monkeypatch.setenv("AWS_ENDPOINT_URL", found.url)
        yield found


def test_a_job_that_cannot_be_described_gives_up_after_max_poll_failures(
    endpoint: Endpoint, task_log: TaskLog
) -> None:
    event = follow("no-such-job", max_poll_failures=3)
    assert event["status"] == "error"
    assert event["job_id"] == "no-such-job"
    assert event["job_status"] == "UNKNOWN"
    assert event["message"].startswith(
        "gave up following service job no-such-job (last seen UNKNOWN): its status could "
        "not be read 3 polls in a row (max_poll_failures); the job may still be running "
        "and a retry of the task reattaches to it; last error: DescribeServiceJob "
        "no-such-job failed: "
    )
    assert task_log().count("DescribeServiceJob no-such-job failed") == 3


def test_failing_polling_rounds_give_up_after_max_poll_failures(
    failing_endpoint: Endpoint,
) -> None:
    event = follow("job-1", max_poll_failures=2)
    assert event["status"] == "error"
    assert "its status could not be read 2 polls in a row" in event["message"]
    assert (
        "last error: polling job queue ml-training failed (2 round(s) in a row): "
        in (event["message"])
    )
    assert "ServerException" in event["message"]


def fail_requests_once_polling_starts(endpoint: Endpoint) -> threading.Thread:
    """From the poller's first ListServiceJobs on, answer every AWS request with a 500."""

    def polling() -> bool:
        return bool(endpoint.stats()["operations"].get("batch.ListServiceJobs"))

    def fail() -> None:
        endpoint.emulator.faults = Faults(FaultOptions(error_rate=1.0))

    return once(polling, fail)


@pytest.mark.usefixtures("airflow_db")
def test_a_deferred_task_fails_with_polling_failed(endpoint: Endpoint, task_log: TaskLog) -> None:
    watcher = fail_requests_once_polling_starts(endpoint)
    state, _ = run_task("unreachable", deferrable=True, max_poll_failures=3, poll_interval=0.05)
    watcher.join()
    assert state == "failed"
    log = task_log()
    assert "PollingFailed" in log
    assert "its status could not be read 3 polls in a row (max_poll_failures)" in log
