"""stop_on_preemption counts only preemptions after the task took the job on."""

from __future__ import annotations

import asyncio
from typing import Any

from airflow_quota_provider.triggers.batch import ServiceJobTrigger
from tests.airflow.conftest import drive
from tests.emulator.conftest import QUEUE, Endpoint, submit


def follow(endpoint: Endpoint, job_id: str, preempted_before: int) -> dict[str, Any]:
    trigger = ServiceJobTrigger(
        job_id=job_id,
        job_queue=QUEUE,
        poll_interval=0.01,
        stop_on_preemption=True,
        preempted_before=preempted_before,
        aws_conn_id=None,
        region_name="us-east-1",
    )
    (event,) = asyncio.run(drive(endpoint, trigger.run(), step=5))
    payload: dict[str, Any] = event.payload
    return payload


def preempted_once(endpoint: Endpoint) -> str:
    borrower = submit(endpoint.batch, "vision", 3, duration=120, name="borrower")
    endpoint.advance(20)
    submit(endpoint.batch, "nlp", 2, duration=60, name="owner")
    for _ in range(30):  # until its training job has stopped
        job = endpoint.batch.describe_service_job(jobId=borrower)
        if job.get("preemptionSummary", {}).get("preemptedAttemptCount"):
            break
        endpoint.advance(1)
    assert job["status"] == "RUNNABLE"
    return borrower


def test_a_preemption_before_the_task_took_the_job_on_does_not_stop_it(
    endpoint: Endpoint,
) -> None:
    # A retried task reattaching to a job preempted during an earlier try.
    event = follow(endpoint, preempted_once(endpoint), preempted_before=1)
    assert event["status"] == "success"
    assert event["preemptions"] == 1


def test_a_preemption_since_the_task_took_the_job_on_stops_it_at_once(
    endpoint: Endpoint,
) -> None:
    # Preempted between the operator's submit and the trigger's first poll.
    event = follow(endpoint, preempted_once(endpoint), preempted_before=0)
    assert event["status"] == "preempted"
    assert event["job_status"] == "RUNNABLE"
