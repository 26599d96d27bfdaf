"""ServiceJobTrigger against the local endpoint: its one event, its log, and its shared poller."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_quota_provider.triggers.batch import ServiceJobTrigger
from tests.airflow.conftest import drive
from tests.emulator.conftest import Endpoint, status, submit

FAST = {"poll_interval": 0.01, "aws_conn_id": None, "region_name": "us-east-1"}


def trigger(job_id: str, **options: Any) -> ServiceJobTrigger:
    return ServiceJobTrigger(job_id=job_id, job_queue="ml-training", **{**FAST, **options})


def run(endpoint: Endpoint, *triggers: ServiceJobTrigger, step: float = 5) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        events = await drive(endpoint, *(t.run() for t in triggers), step=step)
        return [event.payload for event in events]

    return asyncio.run(main())


def test_serialize_round_trip() -> None:
    original = trigger(
        "job-1",
        stop_on_preemption=True,
        max_wait_seconds=60,
        escalate_priority={"after_seconds": 30, "priority": 900},
        cancel_on_kill=False,
        verify=False,
        botocore_config={"retries": {"max_attempts": 3}},
    )
    classpath, kwargs = original.serialize()
    assert classpath == "airflow_quota_provider.triggers.batch.ServiceJobTrigger"
    rebuilt = ServiceJobTrigger(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)


def test_a_job_that_succeeds_fires_one_success_event(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = submit(endpoint.batch, "nlp", 1, duration=60)
    (event,) = run(endpoint, trigger(job_id))
    assert event["status"] == "success"
    assert event["job_id"] == job_id
    assert event["job_status"] == "SUCCEEDED"
    assert event["attempts"] == 1
    assert len(event["training_job_arns"]) == 1
    assert event["preemptions"] == 0
    assert event["run_seconds"] >= 60
    log = capsys.readouterr().out
    assert f"service job {job_id} RUNNING -> SUCCEEDED: Received status from SageMaker" in log
    assert f"attempt 1 of service job {job_id}: training job arn:aws:sagemaker" in log


def test_a_job_that_fails_fires_a_failed_event_with_its_reason(endpoint: Endpoint) -> None:
    job_id = submit(
        endpoint.batch, "nlp", 1, duration=600, tags={"emulator:fail-after-seconds": "10"}
    )
    (event,) = run(endpoint, trigger(job_id))
    assert event["status"] == "failed"
    assert event["job_status"] == "FAILED"
    assert event["status_reason"].startswith("Received status from SageMaker")


def test_a_reclaimed_job_is_followed_through_its_preemption_to_success(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    borrower = submit(endpoint.batch, "vision", 3, duration=120, name="borrower")
    endpoint.advance(20)
    assert status(endpoint.batch, borrower) == "RUNNING"
    owner = submit(endpoint.batch, "nlp", 2, duration=60, name="owner")
    events = run(endpoint, trigger(borrower), trigger(owner))
    by_job = {e["job_id"]: e for e in events}
    assert by_job[owner]["status"] == "success"
    assert by_job[borrower]["status"] == "success"
    assert by_job[borrower]["preemptions"] == 1
    assert by_job[borrower]["attempts"] == 2
    assert len(set(by_job[borrower]["training_job_arns"])) == 2
    log = capsys.readouterr().out
    first = by_job[borrower]["training_job_arns"][0]
    assert (
        f"attempt 1 (training job {first}) of service job {borrower}: Cross-share preemption" in log
    )
    assert f"service job {borrower} RUNNING -> RUNNABLE" in log
    assert "retries left: unlimited" in log
    assert f"attempt 2 of service job {borrower}" in log


def test_stop_on_preemption_fires_a_preempted_event(endpoint: Endpoint) -> None:
    borrower = submit(endpoint.batch, "vision", 3, duration=120, name="borrower")
    endpoint.advance(20)

    async def main() -> list[Any]:
        follow = asyncio.create_task(
            drive(endpoint, trigger(borrower, stop_on_preemption=True).run(), step=1)
        )
        await asyncio.sleep(0.2)
        await asyncio.to_thread(submit, endpoint.batch, "nlp", 2, duration=60, name="owner")
        return await follow

    (event,) = asyncio.run(main())
    assert event.payload["status"] == "preempted"
    assert event.payload["preemptions"] == 1


def test_the_wait_limit_fires_a_timeout_event(endpoint: Endpoint) -> None:
    job_id = submit(endpoint.batch, "nlp", 1, duration=60)
    (event,) = asyncio.run(_collect(trigger(job_id, max_wait_seconds=0.3)))
    assert event.payload["status"] == "timeout"
    assert "max_wait_seconds" in event.payload["message"]


async def _collect(t: ServiceJobTrigger) -> list[Any]:
    return [event async for event in t.run()]


def test_priority_escalation_raises_a_starving_job(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = submit(endpoint.batch, "nlp", 4, duration=10_000, name="blocker")
    endpoint.advance(10)
    waiting = submit(endpoint.batch, "nlp", 1, duration=60, name="waiting", schedulingPriority=1)
    endpoint.advance(1)
    guard = {"after_seconds": 30, "priority": 900}
    asyncio.run(_collect(trigger(waiting, max_wait_seconds=6.0, escalate_priority=guard)))
    assert endpoint.batch.describe_service_job(jobId=waiting)["schedulingPriority"] == 1
    log = capsys.readouterr().out
    assert f"service job {waiting} RUNNABLE, position 1 in the queue, first in share nlp" in log
    endpoint.advance(40)
    asyncio.run(_collect(trigger(waiting, max_wait_seconds=6.0, escalate_priority=guard)))
    assert endpoint.batch.describe_service_job(jobId=waiting)["schedulingPriority"] == 900
    assert "raising its priority from 1 to 900" in capsys.readouterr().out
    assert status(endpoint.batch, blocker) == "RUNNING"


def test_on_kill_terminates_the_job_unless_told_not_to(endpoint: Endpoint) -> None:
    kept = submit(endpoint.batch, "nlp", 1, duration=600, name="kept")
    killed = submit(endpoint.batch, "nlp", 1, duration=600, name="killed")
    asyncio.run(trigger(kept, cancel_on_kill=False).on_kill())
    asyncio.run(trigger(killed).on_kill())
    endpoint.advance(5)
    assert status(endpoint.batch, kept) != "FAILED"
    killed_job = endpoint.batch.describe_service_job(jobId=killed)
    assert killed_job["status"] == "FAILED"
    assert killed_job["isTerminated"] is True


def test_many_triggers_on_one_queue_share_one_poller(endpoint: Endpoint) -> None:
    jobs = [submit(endpoint.batch, "nlp", 1, duration=20, name=f"j{i}") for i in range(20)]
    before: dict[str, dict[str, int]] = endpoint.stats()["operations"]
    events = run(endpoint, *(trigger(j) for j in jobs), step=2)
    assert sorted(e["job_id"] for e in events) == sorted(jobs)
    assert {e["status"] for e in events} == {"success"}
    after: dict[str, dict[str, int]] = endpoint.stats()["operations"]

    def calls(name: str) -> int:
        return sum(after.get(name, {}).values()) - sum(before.get(name, {}).values())

    lists = calls("batch.ListServiceJobs")
    rounds = lists / 6
    describes = calls("batch.DescribeServiceJob")
    # One Describe per job per round would be 20 x rounds.
    assert describes < 20 * rounds / 4, (describes, rounds)
