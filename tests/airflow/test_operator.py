"""QuotaTrainingOperator through ``dag.test()`` against the local endpoint, both wait modes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.airflow.conftest import TaskLog, run_dag_file
from tests.emulator.conftest import G5, P4D, QUEUE, Endpoint, training_payload

pytestmark = pytest.mark.usefixtures("airflow_db")

DAG_FILE = """
import datetime
import json

from airflow.providers.common.compat.sdk import DAG

from airflow_quota_provider.operators.batch import QuotaTrainingOperator

OPTIONS = json.loads({options!r})
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

with DAG({dag_id!r}, schedule=None, start_date=START, catchup=False) as dag:
    QuotaTrainingOperator(
        task_id="train", retry_delay=datetime.timedelta(seconds=0), **OPTIONS
    )
"""


def run_task(dag_id: str, **options: Any) -> tuple[str, Any]:
    """Run one training task (``train``) in ``dag.test()``; its final state and its XCom."""
    ti = run_task_instance(dag_id, **options)
    return ti.state, ti.xcom_pull(task_ids="train") if ti.state == "success" else None


def run_task_instance(dag_id: str, **options: Any) -> Any:
    """Run one training task (``train``) in ``dag.test()``; its task instance at the end."""
    settings = {
        "job_queue": QUEUE,
        "quota_share": "nlp",
        "poll_interval": 0.1,
        "training_config": training_payload(1),
        "tags": {"emulator:duration-seconds": "60"},
        **options,
    }
    source = DAG_FILE.format(options=json.dumps(settings), dag_id=dag_id)
    (ti,) = run_dag_file(dag_id, source).get_task_instances()
    return ti


def jobs_of(endpoint: Endpoint) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for status in (
        "SUBMITTED",
        "PENDING",
        "RUNNABLE",
        "SCHEDULED",
        "STARTING",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
    ):
        found += endpoint.batch.list_service_jobs(jobQueue=QUEUE, jobStatus=status)[
            "jobSummaryList"
        ]
    return found


@pytest.mark.parametrize("deferrable", [True, False], ids=["deferred", "in the worker"])
def test_a_successful_job_returns_its_summary(
    running_endpoint: Endpoint, deferrable: bool, task_log: TaskLog
) -> None:
    state, result = run_task(f"ok_{deferrable}", deferrable=deferrable)
    assert state == "success", task_log()[-3000:]
    (job,) = jobs_of(running_endpoint)
    assert result["job_id"] == job["jobId"]
    assert result["job_arn"] == job["jobArn"]
    assert result["status"] == "SUCCEEDED"
    assert result["attempts"] == 1
    assert result["preemptions"] == 0
    assert len(result["training_job_arns"]) == 1
    assert result["run_seconds"] >= 60
    assert result["queued_seconds"] >= 0
    tags = running_endpoint.batch.describe_service_job(jobId=job["jobId"])["tags"]
    assert tags["airflow:dag_id"] == f"ok_{deferrable}"
    assert tags["airflow:task_id"] == "train"
    assert tags["airflow:map_index"] == "-1"


@pytest.mark.parametrize("deferrable", [True, False], ids=["deferred", "in the worker"])
def test_a_failed_job_raises_service_job_failed_with_both_reasons(
    running_endpoint: Endpoint, deferrable: bool, task_log: TaskLog
) -> None:
    tags = {"emulator:duration-seconds": "600", "emulator:fail-after-seconds": "5"}
    state, _ = run_task(f"failing_{deferrable}", deferrable=deferrable, tags=tags)
    assert state == "failed"
    log = task_log()
    assert "ServiceJobFailed" in log
    # the status reason, logged while polling or (when the job had ended before the
    # first poll, as on a busy machine) in the error
    assert re.search(
        r"(FAILED|ServiceJobFailed: service job \S+): Received status from SageMaker", log
    )
    assert "SageMaker FailureReason: " in log
    assert "SageMaker FailureReason: none" not in log


BAD_CONFIG = {**training_payload(1), "ResourceConfg": {}}


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"priority": 10_000}, "InvalidPriority", "priority must be an integer from 0 to 9999"),
        ({"quota_share": "robotics"}, "ShareUnavailable", "share robotics does not exist"),
        (
            {"training_config": training_payload(5)},
            "CannotFit",
            f"the job needs 5 {P4D}; job queue ml-training has 4; "
            f"share nlp can hold 4 {G5}, 4 {P4D}",
        ),
        ({"training_config": BAD_CONFIG}, "InvalidTrainingConfig", "ResourceConfg"),
    ],
    ids=["bad priority", "unknown share", "cannot fit", "invalid training_config"],
)
def test_invalid_requests_fail_before_anything_is_submitted_without_retries(
    endpoint: Endpoint,
    task_log: TaskLog,
    options: dict[str, Any],
    error: str,
    words: str,
) -> None:
    # No retry could make these succeed: the task fails at its first try, retries unused.
    ti = run_task_instance("invalid", retries=3, **options)
    log = task_log()
    assert (ti.state, ti.try_number, ti.max_tries) == ("failed", 1, 3), log[-3000:]
    assert f"RequestRefused: {error}: " in log
    assert words in log
    assert "up_for_retry" not in log.lower()
    assert jobs_of(endpoint) == []


def test_a_disabled_share_fails_before_submitting(endpoint: Endpoint, task_log: TaskLog) -> None:
    (share,) = [
        s
        for s in endpoint.batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"]
        if s["quotaShareName"] == "nlp"
    ]
    endpoint.batch.update_quota_share(quotaShareArn=share["quotaShareArn"], state="DISABLED")
    # The share may be enabled again, so the task is retried as for any other error.
    ti = run_task_instance("disabled", retries=1)
    assert (ti.state, ti.try_number) == ("failed", 2)
    log = task_log()
    assert "ShareUnavailable" in log and "RequestRefused" not in log
    assert "share nlp is DISABLED and accepts no new jobs" in log
    assert jobs_of(endpoint) == []


def test_a_retried_task_reattaches_to_its_job(
    running_endpoint: Endpoint, task_log: TaskLog
) -> None:
    # A try stops waiting (timeout) while the job runs; each retry submits
    # the same request with the same clientToken and follows the same job,
    # until one finds it ended and returns its summary.
    state, result = run_task(
        "retried",
        retries=5,
        deferrable=True,
        max_wait_seconds=0.2,
        tags={"emulator:duration-seconds": "30"},
    )
    log = task_log()
    (job,) = jobs_of(running_endpoint)
    assert state == "success"
    assert result["job_id"] == job["jobId"]
    assert log.count(f"submitted service job {job['jobId']}") >= 2
    assert "ServiceJobTimeout" in log
