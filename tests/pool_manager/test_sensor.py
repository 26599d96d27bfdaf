"""QuotaCapacitySensor on a pools fleet, on real Airflow processes and the pool manager.

The DAGs are ``dags/pools_sensor.py``. A vision task takes all 4 GPUs of
``fleet.yaml`` (2 of them borrowed from nlp): a sensor waiting for GPUs in
share nlp waits, deferred or poking, while neither nlp's own GPUs nor any it
could borrow are free, and succeeds once the vision task ends; the nlp task
after it then runs. A sensor that could never succeed fails with what is wrong.

Time: about 1 min on 2 cores (``tests/DURATIONS.md``: 64 s): a stack, and three sensors each
waiting for a task to end.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from cryptography.fernet import Fernet

from airflow_quota_provider.demo.airflow_api import AirflowApi, AirflowApiError
from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack
from tests.pool_manager.conftest import HERE, managed_stack, task_instance, trigger, wait_state

pytestmark = pytest.mark.slow

PASSWORD = "quota-sensor-Passw0rd-7f3a"
"""The API user's password: the connection holds it; no trigger, log or event may."""

FLEET = str(HERE / "fleet.yaml")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-sensor")
    dags = (
        "pools_vision",
        "pools_capacity_deferred",
        "pools_capacity_poking",
        "pools_capacity_refused",
    )
    with managed_stack(workdir, HERE / "fleet.yaml", dags, password=PASSWORD) as stack:
        yield stack


def task_log(
    api: AirflowApi, dag_id: str, run_id: str, task_id: str, try_number: int = 1
) -> list[dict[str, Any]]:
    """The records of the task's log of one try (its trigger's included), as Airflow's API
    serves them; none while there is no log yet."""
    path = (
        f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}/taskInstances/"
        f"{quote(task_id, safe='')}/logs/{try_number}?full_content=true"
    )
    try:
        content = api.get(path)["content"]
    except AirflowApiError as error:
        if error.status == 404:
            return []
        raise
    return [record for record in content if isinstance(record, dict)]


def said(records: list[dict[str, Any]], words: str, by: str) -> int:
    """How many records of the logger named ``...by`` say ``words``. Airflow 3.1 names no
    class in a task's records (no logger, or just ``task``): there any record saying them
    counts."""
    return sum(
        1
        for record in records
        if words in str(record.get("event"))
        and (str(record.get("logger", "")).endswith(by) or "." not in str(record.get("logger", "")))
    )


def trigger_kwargs(stack: Stack) -> list[dict[str, Any]]:
    """Every trigger's keyword arguments as Airflow stores them: as they are (this Airflow
    writes them as JSON) or encrypted with its Fernet key."""
    fernet = Fernet(stack.env["AIRFLOW__CORE__FERNET_KEY"].encode())
    with sqlite3.connect(stack.home / "airflow.db") as db:
        rows = [str(row[0]) for row in db.execute("SELECT kwargs FROM trigger")]
    return [
        _plain(json.loads(text if text.startswith("{") else fernet.decrypt(text.encode())))
        for text in rows
    ]


def _plain(value: Any) -> Any:
    """``value`` without the ``{"__var": ..., "__type": ...}`` wrapping with which Airflow
    3.1 stores a trigger's keyword arguments."""
    if isinstance(value, dict):
        if set(value) == {"__var", "__type"}:
            return _plain(value["__var"])
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


@pytest.mark.parametrize(
    ("dag_id", "gpus", "waiting"),
    [("pools_capacity_deferred", 3, "deferred"), ("pools_capacity_poking", 2, "running")],
    ids=["deferred", "poking"],
)
def test_the_sensor_waits_while_the_share_s_capacity_is_taken_and_succeeds_once_it_frees(
    stack: Stack, dag_id: str, gpus: int, waiting: str
) -> None:
    api = stack.api
    vision_run = trigger(api, "pools_vision", seconds=600)
    wait_state(stack, "pools_vision", vision_run, "running", "the vision task to take 4 GPUs")
    run_id = api.trigger(dag_id)
    line = f"share nlp could start {{'gpu': 0}} now; {{'gpu': {gpus}}} more needed"
    # deferred: the trigger's own check; poking: two pokes
    by, times = ("QuotaCapacityTrigger", 1) if waiting == "deferred" else ("QuotaCapacitySensor", 2)
    wait_for(
        f"the {by} to say {times} time(s) what it waits for",
        lambda: said(task_log(api, dag_id, run_id, "wait"), line, by) >= times,
        120,
        stack.processes,
    )
    assert task_instance(api, dag_id, run_id, "wait")["state"] == waiting
    assert task_instance(api, dag_id, run_id, "train")["state"] is None
    if waiting == "deferred":
        # Airflow 3.3.2 fails a task whose trigger fires before the scheduler has seen its
        # worker exit after deferring (apache/airflow#67287); on a loaded machine that takes
        # seconds, so the capacity frees only after it
        scheduler_log = stack.processes.log_dir / "scheduler.log"
        seen = (
            "Received executor event with state success for task instance TaskInstanceKey("
            f"dag_id='{dag_id}', task_id='wait', run_id='{run_id}', try_number=1"
        )
        wait_for(
            "the scheduler to see the sensor's worker exit",
            lambda: seen in scheduler_log.read_text(),
            60,
            stack.processes,
        )
        # the source's parameters, no secret: the triggerer reads the connection itself
        assert trigger_kwargs(stack) == [
            {
                "quota_share": "nlp",
                "capacity": {"gpu": gpus},
                "poll_interval": 1,
                "fleet_config": FLEET,
                "airflow_api_conn_id": "airflow_api_default",
            }
        ]

    api.set_task_state("pools_vision", vision_run, "train", "success")
    wait_state(stack, dag_id, run_id, "success", "the sensor to succeed and nlp's task to run")
    assert task_instance(api, dag_id, run_id, "wait")["state"] == "success"
    log = task_log(api, dag_id, run_id, "wait")
    if waiting == "deferred":
        assert said(log, "share nlp could start {'gpu': 4} now", "QuotaCapacitySensor"), log
    assert PASSWORD not in json.dumps(log)
    assert PASSWORD not in (stack.processes.log_dir / "triggerer.log").read_text()
    # the manager logs in with the same password, and neither it nor the JWT it got is logged
    manager_log = (stack.processes.log_dir / "pool-manager.log").read_text()
    assert "creating pool" in manager_log or "cycle:" in manager_log
    assert PASSWORD not in manager_log and "eyJ" not in manager_log


REFUSALS = [
    (
        "unknown_share",
        2,
        "RequestRefused",
        "ShareUnavailable: job unknown_share refused (UNKNOWN_SHARE): share robotics does not "
        "exist in fleet gpus; its shares are nlp, vision",
    ),
    (
        "too_much",
        2,
        "RequestRefused",
        "CannotFit: job too_much refused (EXCEEDS_QUEUE_CAPACITY): the job needs 5 gpu; fleet "
        "gpus has 4; share nlp can hold 4 gpu",
    ),
    (
        "unknown_unit",
        2,
        "RequestRefused",
        "CannotFit: job unknown_unit refused (UNKNOWN_UNIT): fleet gpus has no tpu",
    ),
    (
        "wrong_backend",
        0,
        "ConfigError",
        "backend: fleet_config needs a config with backend: airflow_pools; this one's backend "
        "is aws_batch: give its job queue as job_queue='ml-training' instead",
    ),
    (
        "no_connection",
        0,
        "AirflowNotFoundException",
        "no Airflow connection 'no_such_api' (airflow_api_conn_id) to read the pools' task "
        "instances with: define it, e.g. AIRFLOW_CONN_NO_SUCH_API=http://USER:PASSWORD@HOST:"
        "PORT, as a user that may read task instances",
    ),
]


def test_a_sensor_that_could_never_succeed_fails_at_once_with_what_is_wrong(stack: Stack) -> None:
    api = stack.api
    run_id = api.trigger("pools_capacity_refused")
    task_ids = [refusal[0] for refusal in REFUSALS]

    def all_failed() -> bool:
        states = api.task_states("pools_capacity_refused", run_id)
        return all(states.get(task_id) == "failed" for task_id in task_ids)

    wait_for("every refused sensor to fail", all_failed, 180, stack.processes)
    for task_id, retries, error, words in REFUSALS:
        instance = task_instance(api, "pools_capacity_refused", run_id, task_id)
        assert (instance["try_number"], instance["max_tries"]) == (1, retries), instance
        log = task_log(api, "pools_capacity_refused", run_id, task_id)
        errors = [e for record in log for e in record.get("error_detail") or ()]
        # the error, then what it was raised from, if anything
        assert errors[0]["exc_type"] == error, log
        assert words in errors[0]["exc_value"], errors
