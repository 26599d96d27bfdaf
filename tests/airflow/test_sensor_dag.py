"""QuotaCapacitySensor through ``dag.test()`` against the local endpoint: wait, then train."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.airflow.conftest import TaskLog, once, run_dag_file
from tests.emulator.conftest import P4D, QUEUE, Endpoint, status, submit, training_payload

pytestmark = pytest.mark.usefixtures("airflow_db")

DAG_FILE = """
import datetime
import json

from airflow.providers.common.compat.sdk import DAG

from airflow_quota_provider.operators.batch import QuotaTrainingOperator
from airflow_quota_provider.sensors.capacity import QuotaCapacitySensor

SENSOR = json.loads({sensor!r})
TRAIN = json.loads({train!r})
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

with DAG({dag_id!r}, schedule=None, start_date=START, catchup=False) as dag:
    wait = QuotaCapacitySensor(task_id="wait", job_queue="ml-training", **SENSOR)
    train = QuotaTrainingOperator(
        task_id="train", job_queue="ml-training", wait_for_completion=False, **TRAIN
    )
    wait >> train
"""


def run_dag(dag_id: str, **sensor: Any) -> dict[str, tuple[str, Any]]:
    """Wait for 2 p4d in share nlp, then submit a 2-p4d job there; each task's state and XCom."""
    return {
        ti.task_id: (ti.state, ti.xcom_pull(task_ids=ti.task_id) if ti.state == "success" else None)
        for ti in run_dag_instances(dag_id, **sensor).values()
    }


def run_dag_instances(dag_id: str, **sensor: Any) -> dict[str, Any]:
    """As :func:`run_dag`; each task's instance at the end."""
    sensor = {"quota_share": "nlp", "capacity": {P4D: 2}, "poll_interval": 0.05, **sensor}
    train = {"quota_share": "nlp", "training_config": training_payload(2)}
    source = DAG_FILE.format(sensor=json.dumps(sensor), train=json.dumps(train), dag_id=dag_id)
    run = run_dag_file(dag_id, source)
    return {ti.task_id: ti for ti in run.get_task_instances()}


def free_capacity_after_checks(endpoint: Endpoint, checks: int) -> Any:
    """Move time 120 s (ending the blocker) once the share was checked ``checks`` times."""

    def checked() -> bool:
        counts: dict[str, int] = endpoint.stats()["operations"].get("batch.ListQuotaShares", {})
        return sum(counts.values()) >= checks

    return once(checked, lambda: endpoint.advance(120))


@pytest.mark.parametrize("deferrable", [True, False], ids=["deferred", "poking"])
def test_the_sensor_waits_until_the_share_could_start_the_capacity(
    endpoint: Endpoint, deferrable: bool, task_log: TaskLog
) -> None:
    blocker = submit(endpoint.batch, "vision", 3, duration=60, name="blocker")
    endpoint.advance(10)  # vision runs 3 p4d, one of them nlp's: nlp could start 1 now
    mover = free_capacity_after_checks(endpoint, 4)
    tasks = run_dag(f"capacity_{deferrable}", deferrable=deferrable)
    mover.join()
    log = task_log()
    assert tasks["wait"][0] == "success", log[-3000:]
    assert status(endpoint.batch, blocker) == "SUCCEEDED"
    assert f"'{P4D}': 1}} now; {{'{P4D}': 1}} more needed" in log  # before the blocker ended
    state, submitted = tasks["train"]
    assert state == "success"
    endpoint.advance(5)  # the capacity the sensor saw is there: the job starts at once
    assert status(endpoint.batch, submitted["job_id"]) in ("SCHEDULED", "STARTING", "RUNNING")


@pytest.mark.parametrize(
    ("sensor", "error", "words"),
    [
        (
            {"quota_share": "robotics"},
            "ShareUnavailable",
            "share robotics does not exist in job queue ml-training; its shares are nlp, vision",
        ),
        (
            {"capacity": {P4D: 5}},
            "CannotFit",
            f"the job needs 5 {P4D}; job queue ml-training has 4",
        ),
        (
            {"capacity": {"ml.trn1.32xlarge": 1}},
            "CannotFit",
            "job queue ml-training has no ml.trn1.32xlarge",
        ),
        (
            {"capacity": {P4D: 0}},
            "AdmissionRefused",
            "demand must name at least one unit, each with a count of at least 1",
        ),
    ],
    ids=["unknown share", "more than the share could hold", "unknown type", "zero instances"],
)
def test_a_capacity_that_could_never_be_met_fails_at_once_without_retries(
    endpoint: Endpoint,
    task_log: TaskLog,
    sensor: dict[str, Any],
    error: str,
    words: str,
) -> None:
    tasks = run_dag_instances("never", deferrable=True, retries=2, retry_delay=0, **sensor)
    log = task_log()
    wait = tasks["wait"]
    assert (wait.state, wait.try_number, wait.max_tries) == ("failed", 1, 2), log[-3000:]
    assert tasks["train"].state != "success"
    assert f"RequestRefused: {error}: " in log
    assert words in log
    jobs = endpoint.batch.list_service_jobs(jobQueue=QUEUE, jobStatus="RUNNABLE")
    assert jobs["jobSummaryList"] == []


def test_a_poking_sensor_times_out_while_the_capacity_stays_taken(
    endpoint: Endpoint, task_log: TaskLog
) -> None:
    # Poking: dag.test() runs a deferred trigger in line without its deferral timeout.
    submit(endpoint.batch, "vision", 4, duration=600, name="blocker")
    endpoint.advance(10)
    tasks = run_dag("timeout", deferrable=False, timeout=1)
    assert tasks["wait"][0] == "failed"
    log = task_log()
    assert "AirflowSensorTimeout" in log
    assert f"'{P4D}': 0}} now; {{'{P4D}': 2}} more needed" in log
