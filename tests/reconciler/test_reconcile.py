"""``airflow-quota reconcile`` against a real Airflow and the local AWS endpoint.

Jobs carry the ``airflow:*`` tags of real task instances: one running (its job is
watched), one that never started (no state, as after a clear), one marked failed
by hand, one whose run was deleted, one of a DAG that does not exist, and, for
SageMaker, a job of try 1 while its task is at try 2. Only the orphans are stopped,
only after the grace period, and a job without our tags is never touched.

Time: about 1 min on 2 cores (``tests/DURATIONS.md``: 71 s): a stack, and the reconciler's
grace period passing before it stops an orphan.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from airflow_quota_provider.airflow_pools.connection import PASSWORD_VARIABLE
from airflow_quota_provider.airflow_pools.restarting import STUCK_AFTER_SECONDS
from airflow_quota_provider.cli import main
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.demo.processes import Processes, wait_for
from airflow_quota_provider.demo.stack import Stack, StackSettings
from tests.emulator.conftest import training_payload

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BATCH_CONFIG = ROOT / "dags" / "quota.yaml"
POOLS_CONFIG = ROOT / "tests" / "pool_manager" / "fleet.yaml"
LONG = {"emulator:duration-seconds": "1000000"}
GRACE = 20.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("reconcile")
    settings = StackSettings(
        workdir=workdir, dags_folder=HERE / "dags", quota_config=BATCH_CONFIG, time_scale=1
    )
    with Processes(workdir / "logs") as processes:
        stack = Stack(settings, processes)
        stack.start(("reconcile_running", "reconcile_parked"))
        yield stack


def client(stack: Stack, service: str) -> Any:
    # boto3-stubs types only literal service names; this one is the caller's
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=stack.emulator_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def reconcile(stack: Stack, config: Path, grace: float, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv(PASSWORD_VARIABLE, stack.settings.password)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return main(
        [
            *("reconcile", "--config", str(config), "--grace", f"{grace:g}"),
            *("--api-url", stack.api_url, "--username", stack.settings.username),
            *("--endpoint-url", stack.emulator_url, "--region", "us-east-1"),
        ]
    )


def identity(dag_id: str, run_id: str) -> TaskKey:
    return TaskKey(dag_id, run_id, "train")


def submit(batch: Any, name: str, tags: dict[str, str]) -> str:
    answer = batch.submit_service_job(
        jobName=name,
        jobQueue="ml-training",
        quotaShareName="nlp",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(training_payload(1)),
        tags={**LONG, **tags},
    )
    return str(answer["jobId"])


def ti(stack: Stack, dag_id: str, run_id: str) -> dict[str, Any]:
    run = urllib.parse.quote(run_id, safe="")
    return dict(stack.api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run}/taskInstances/train"))


def started_run(stack: Stack) -> str:
    run_id = stack.api.trigger("reconcile_running")
    wait_for(
        "the running task",
        lambda: ti(stack, "reconcile_running", run_id)["state"] == "running",
        120,
        stack.processes,
    )
    return run_id


def test_service_jobs_whose_task_no_longer_watches_them_are_terminated_after_the_grace(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    batch = client(stack, "batch")
    running = started_run(stack)
    parked, failed, deleted = (stack.api.trigger("reconcile_parked") for _ in range(3))
    stack.api.set_task_state("reconcile_parked", failed, "train", "failed")
    jobs = {
        "watched": submit(batch, "watched", identity("reconcile_running", running).tags()),
        "no-state": submit(batch, "no-state", identity("reconcile_parked", parked).tags()),
        "failed": submit(batch, "failed", identity("reconcile_parked", failed).tags()),
        "run-deleted": submit(batch, "run-deleted", identity("reconcile_parked", deleted).tags()),
        "no-dag": submit(batch, "no-dag", identity("no_such_dag", "r").tags()),
        "not-ours": submit(batch, "not-ours", {"team": "nlp"}),
    }
    stack.api.delete(f"/api/v2/dags/reconcile_parked/dagRuns/{urllib.parse.quote(deleted)}")

    def terminated() -> set[str]:
        return {
            name
            for name, job_id in jobs.items()
            if batch.describe_service_job(jobId=job_id).get("isTerminated")
        }

    # the first pass only notes the orphans: they have a grace period
    assert reconcile(stack, BATCH_CONFIG, GRACE, monkeypatch) == 0
    assert terminated() == set()
    orphans = {"no-state", "failed", "run-deleted", "no-dag"}
    # (created times come to the reconciler's clock by whole seconds: one job's grace may end
    # a pass after another's)
    wait_for(
        "the grace to pass",
        lambda: reconcile(stack, BATCH_CONFIG, GRACE, monkeypatch) == 0 and terminated() >= orphans,
        60,
        every=1,
    )
    assert terminated() == orphans
    reasons = {
        name: batch.describe_service_job(jobId=jobs[name])["statusReason"]
        for name in ("no-state", "failed", "run-deleted")
    }
    assert reasons["failed"].startswith(
        f"Stopped by airflow-quota: its task instance reconcile_parked/{failed}/train is failed"
    )
    assert "is failed, so nothing follows the job" in reasons["failed"]
    assert "is cleared (no state)" in reasons["no-state"]
    assert "no longer exists (deleted, or its run deleted)" in reasons["run-deleted"]
    stack.api.set_task_state("reconcile_running", running, "train", "success")


def test_a_training_job_of_an_earlier_try_is_stopped_and_the_current_trys_is_kept(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    sagemaker = client(stack, "sagemaker")
    run_id = started_run(stack)
    task = identity("reconcile_running", run_id)

    def create(name: str, tags: dict[str, str]) -> None:
        request = training_payload(1, TrainingJobName=name)
        request["Tags"] = [{"Key": k, "Value": v} for k, v in {**LONG, **tags}.items()]
        sagemaker.create_training_job(**request)

    create(task.training_job_name(1), task.tags())
    create(task.training_job_name(2), task.tags())
    create("someone-elses", {**task.tags()})  # our tags, but not a name we give: not ours
    create(task.training_job_name(1).replace("-t1", "-t9x"), task.tags())

    def status(name: str) -> str:
        return str(sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"])

    # try 1 runs and watches its job; try 2's job is an orphan... of a try not yet reached:
    # only a job of an earlier try, or of a task that stopped watching, is stopped
    assert reconcile(stack, POOLS_CONFIG, 0, monkeypatch) == 0
    assert status(task.training_job_name(1)) == "InProgress"
    # the task is cleared and runs again as try 2: try 1's job is left behind
    clear = {"dag_run_id": run_id, "task_ids": ["train"], "dry_run": False, "only_failed": False}
    stack.api.post("/api/v2/dags/reconcile_running/clearTaskInstances", clear)
    cleared = time.monotonic()

    def runs_again() -> bool:
        nonlocal cleared
        seen = ti(stack, "reconcile_running", run_id)
        if seen["state"] == "restarting" and time.monotonic() - cleared > STUCK_AFTER_SECONDS:
            # Airflow 3.0 leaves a cleared running task restarting (apache/airflow#55045):
            # cleared again once its process is gone, as the pool manager does
            stack.api.post("/api/v2/dags/reconcile_running/clearTaskInstances", clear)
            cleared = time.monotonic()
        return bool(seen["try_number"] == 2 and seen["state"] == "running")

    wait_for("try 2 to run", runs_again, 120, stack.processes)
    assert reconcile(stack, POOLS_CONFIG, 0, monkeypatch) == 0
    assert status(task.training_job_name(1)) in ("Stopping", "Stopped")
    assert status(task.training_job_name(2)) == "InProgress"
    assert status("someone-elses") == "InProgress"
    stack.api.set_task_state("reconcile_running", run_id, "train", "success")


def test_a_pass_that_cannot_read_airflow_stops_nothing_and_says_why(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    batch = client(stack, "batch")
    job_id = submit(batch, "orphan", identity("no_such_dag", "r").tags())
    monkeypatch.setenv(PASSWORD_VARIABLE, "wrong")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    code = main(
        [
            *("reconcile", "--config", str(BATCH_CONFIG), "--grace", "0"),
            *("--api-url", stack.api_url, "--username", stack.settings.username),
            *("--endpoint-url", stack.emulator_url, "--region", "us-east-1"),
        ]
    )
    assert code == 1
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning.startswith("reconcile pass stopped, nothing more stopped: log in: answered 401")
    assert "wrong" not in warning
    assert not batch.describe_service_job(jobId=job_id).get("isTerminated")
    batch.terminate_service_job(jobId=job_id, reason="test over")
