"""The endpoint throttles 20% of requests: every task and trigger still ends right, no job twice.

Throttled answers are Batch's ``TooManyRequestsException`` (429), which
botocore retries (``AWS_MAX_ATTEMPTS=3`` here, so about 1 call in 125 still
fails); what botocore does not absorb fails a task try, and Airflow's retry
submits again with the same ``clientToken``, which must return the same job.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_quota_provider.aws_batch.submission import build_request
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.emulator.faults import FaultOptions
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.triggers.batch import ServiceJobTrigger
from tests.airflow.conftest import TaskLog, drive, reclaim_once_running
from tests.airflow.test_operator import run_task
from tests.emulator.conftest import (
    QUEUE,
    TWO_SHARES,
    Endpoint,
    list_all_jobs,
    serve,
    training_payload,
)
from tests.emulator.conftest import submit as submit_job

SEED = 120
"""With this seed the first task below meets, in its first nine requests (three to
read the queue's config, a submit, a describe, and the same again), a throttled
submit, then a throttled describe right after its job was created: so its
submit is retried after a throttle, and a later try submits again and gets the
same job back. A change in the operator's calls may need another seed; the
asserts on the log and the statistics below say so."""


def throttling(monkeypatch: pytest.MonkeyPatch, **options: Any) -> Iterator[Endpoint]:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "3")
    faults = FaultOptions(throttle_rate=0.2, seed=SEED)
    for found in serve(TWO_SHARES, faults=faults, **options):
        monkeypatch.setenv("AWS_ENDPOINT_URL", found.url)
        yield found


@pytest.fixture
def throttled(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """Time running 50x; 20% of AWS requests throttled."""
    yield from throttling(monkeypatch, time_scale=50.0)


@pytest.fixture
def throttled_still(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """Time stopped (moved by ``endpoint.advance``); 20% of AWS requests throttled."""
    yield from throttling(monkeypatch)


def patient(endpoint: Endpoint) -> Any:
    """A Batch client of the test itself, retrying throttled answers until they pass."""
    return endpoint.client("batch", retries={"max_attempts": 30})


def jobs_by_task(endpoint: Endpoint) -> Counter[tuple[str, ...]]:
    """How many jobs each task instance (its tags) has; jobs from outside Airflow count as ()."""
    batch = patient(endpoint)
    counts: Counter[tuple[str, ...]] = Counter()
    for job in list_all_jobs(batch):
        tags = batch.describe_service_job(jobId=job["jobId"])["tags"]
        ids = ("dag_id", "task_id", "run_id", "map_index")
        counts[tuple(tags[f"airflow:{i}"] for i in ids if f"airflow:{i}" in tags)] += 1
    return counts


def throttled_submits(endpoint: Endpoint) -> int:
    outcomes = endpoint.stats()["operations"].get("batch.SubmitServiceJob", {})
    return int(outcomes.get("TooManyRequestsException", 0))


@pytest.mark.usefixtures("airflow_db")
def test_tasks_end_right_and_submit_once_under_throttling(
    throttled: Endpoint, task_log: TaskLog
) -> None:
    # No botocore retries for this task: each throttle fails a try, Airflow retries it.
    state, result = run_task(
        "resubmitted",
        deferrable=False,
        retries=30,
        botocore_config={"retries": {"total_max_attempts": 1}},
    )
    log = task_log()
    assert state == "success", log[-3000:]
    assert throttled_submits(throttled) >= 1
    assert log.count(f"submitted service job {result['job_id']} ") >= 2
    assert result["status"] == "SUCCEEDED"

    outcomes = {
        "steady": run_task("steady", deferrable=True, retries=3),
        "in_worker": run_task("in_worker", deferrable=False, retries=3),
        "failing": run_task(  # its retry reattaches to the FAILED job and fails again
            "failing",
            deferrable=True,
            retries=1,
            tags={"emulator:duration-seconds": "600", "emulator:fail-after-seconds": "5"},
        ),
    }
    reclaimer = reclaim_once_running(throttled, "borrower-train", patient(throttled))
    outcomes["borrower"] = run_task(
        "borrower",
        deferrable=True,
        retries=3,
        quota_share="vision",
        training_config=training_payload(3),
        tags={"emulator:duration-seconds": "300"},  # time for a throttled reclaimer
    )
    reclaimer.join()
    log = task_log()

    assert {task: state for task, (state, _) in outcomes.items()} == {
        "steady": "success",
        "in_worker": "success",
        "failing": "failed",
        "borrower": "success",
    }, log[-3000:]
    assert "ServiceJobFailed" in log
    for task in ("steady", "in_worker", "borrower"):
        xcom = outcomes[task][1]
        assert xcom["status"] == "SUCCEEDED"
        assert len(xcom["training_job_arns"]) == xcom["attempts"]
    borrowed = outcomes["borrower"][1]
    assert borrowed["preemptions"] == 1
    assert borrowed["attempts"] == 2

    per_task = jobs_by_task(throttled)
    assert sorted(key[0] if key else "owner" for key in per_task) == sorted(
        ["resubmitted", "steady", "in_worker", "failing", "borrower", "owner"]
    )
    assert set(per_task.values()) == {1}, per_task


def test_the_same_client_token_returns_the_same_job_through_throttling(
    throttled_still: Endpoint,
) -> None:
    hook = BatchQuotaHook(aws_conn_id=None, region_name="us-east-1")
    first, again = [], []
    for run in range(10):
        request = build_request(
            identity=TaskKey("dag", f"run-{run}", "train"),
            job_queue=QUEUE,
            quota_share="nlp",
            training_config=training_payload(1),
            priority=1,
        )
        first.append(hook.submit_service_job(**request)["jobId"])
        again.append(hook.submit_service_job(**request)["jobId"])
    assert again == first
    assert len(list_all_jobs(patient(throttled_still))) == 10
    assert throttled_submits(throttled_still) >= 1


def test_triggers_follow_every_job_to_its_end_under_throttling(
    throttled_still: Endpoint,
) -> None:
    batch = patient(throttled_still)
    borrower = submit_job(batch, "vision", 3, duration=120, name="borrower")
    throttled_still.advance(20)  # it runs, borrowing one of nlp's instances
    owner = submit_job(batch, "nlp", 2, duration=60, name="owner")  # reclaims it
    plain = [submit_job(batch, "nlp", 1, duration=40, name=f"plain-{n}") for n in range(3)]
    failing = submit_job(
        batch, "nlp", 1, duration=600, name="failing", tags={"emulator:fail-after-seconds": "10"}
    )
    jobs = [borrower, owner, *plain, failing]
    triggers = [
        ServiceJobTrigger(
            job_id=job, job_queue=QUEUE, poll_interval=0.01, aws_conn_id=None, max_poll_failures=10
        )
        for job in jobs
    ]

    async def main() -> list[Any]:
        return await drive(throttled_still, *(t.run() for t in triggers), step=5)

    events = {e.payload["job_id"]: e.payload for e in asyncio.run(main())}
    assert sorted(events) == sorted(jobs)
    assert {job: events[job]["status"] for job in jobs} == {
        **dict.fromkeys(plain, "success"),
        failing: "failed",
        borrower: "success",
        owner: "success",
    }
    assert events[borrower]["preemptions"] == 1
    assert events[borrower]["attempts"] == 2
    assert len(list_all_jobs(batch)) == len(jobs)
