"""PoolTrainingOperator through ``dag.test()`` against the local endpoint: one training job
per try, reattaching, stopping an earlier try's job, refusals and failures."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from airflow_quota_provider.core.task_key import TaskKey
from tests.airflow.conftest import TaskLog, run_dag_file
from tests.emulator.conftest import P4D, Endpoint, training_payload

pytestmark = pytest.mark.usefixtures("airflow_db")

DAG_FILE = """
import datetime
import json

from airflow.sdk import DAG

from airflow_quota_provider.operators.sagemaker import PoolTrainingOperator

OPTIONS = json.loads({options!r})
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)



class GivesUpOnce(PoolTrainingOperator):
    # its first try stops waiting after a second, leaving its job running (as a worker
    # that died would)

    def execute(self, context):
        self.max_wait_seconds = 1 if context["ti"].try_number == 1 else None
        return super().execute(context)


operator = GivesUpOnce if OPTIONS.pop("gives_up_once", False) else PoolTrainingOperator
with DAG({dag_id!r}, schedule=None, start_date=START, catchup=False) as dag:
    operator(task_id="train", retry_delay=datetime.timedelta(seconds=0), **OPTIONS)
"""
CHECKPOINTS = {"S3Uri": "s3://bucket/checkpoints/pool-training"}
LOGICAL = datetime.datetime(2026, 5, 1, tzinfo=datetime.UTC)


def config(instances: int = 1, seconds: int = 60, **extra: Any) -> dict[str, Any]:
    request = training_payload(instances, **extra)
    del request["TrainingJobName"]
    request["Tags"] = [{"Key": "emulator:duration-seconds", "Value": str(seconds)}]
    return request


def run_task(dag_id: str, **options: Any) -> Any:
    """Run the one task ``train`` in ``dag.test()`` at :data:`LOGICAL`; its task instance."""
    settings = {"poll_interval": 0.1, "training_config": config(), **options}
    source = DAG_FILE.format(options=json.dumps(settings), dag_id=dag_id)
    (ti,) = run_dag_file(
        dag_id, source, logical_date=LOGICAL, run_after=LOGICAL
    ).get_task_instances()
    return ti


def identity_of(dag_id: str) -> TaskKey:
    from airflow.models.dagrun import DagRun
    from airflow.utils.types import DagRunType

    run_id = DagRun.generate_run_id(
        run_type=DagRunType.MANUAL, logical_date=LOGICAL, run_after=LOGICAL
    )
    return TaskKey(dag_id, run_id, "train", -1)


def jobs(endpoint: Endpoint) -> list[dict[str, Any]]:
    summaries = endpoint.sagemaker.list_training_jobs(MaxResults=100)["TrainingJobSummaries"]
    return [
        endpoint.sagemaker.describe_training_job(TrainingJobName=s["TrainingJobName"])
        for s in summaries
    ]


def tags_of(endpoint: Endpoint, job: dict[str, Any]) -> dict[str, str]:
    tags = endpoint.sagemaker.list_tags(ResourceArn=job["TrainingJobArn"])["Tags"]
    return {t["Key"]: t["Value"] for t in tags}


@pytest.mark.parametrize("deferrable", [True, False], ids=["deferred", "in the worker"])
def test_a_try_creates_its_own_job_and_returns_the_summary(
    running_endpoint: Endpoint, deferrable: bool
) -> None:
    dag_id = f"pool_ok_{deferrable}"
    ti = run_task(dag_id, deferrable=deferrable)
    assert ti.state == "success"
    (job,) = jobs(running_endpoint)
    name = identity_of(dag_id).training_job_name(1)
    assert job["TrainingJobName"] == name and job["TrainingJobStatus"] == "Completed"
    assert ti.run_id == identity_of(dag_id).run_id
    result = ti.xcom_pull(task_ids="train")
    assert result["training_job_name"] == name
    assert result["training_job_arn"] == job["TrainingJobArn"]
    assert result["training_job_arns"] == [job["TrainingJobArn"]]
    assert (result["attempts"], result["preemptions"], result["status"]) == (1, 0, "Completed")
    assert result["run_seconds"] == job["TrainingTimeInSeconds"] == 60
    tags = tags_of(running_endpoint, job)
    assert tags["airflow:dag_id"] == dag_id and tags["airflow:try_number"] == "1"
    assert tags["emulator:duration-seconds"] == "60"
    assert ti.pool_slots == 1  # the request's instance count


def test_a_try_whose_job_exists_reattaches_instead_of_creating_another(
    running_endpoint: Endpoint, task_log: TaskLog
) -> None:
    dag_id = "pool_reattach"
    name = identity_of(dag_id).training_job_name(1)
    running_endpoint.sagemaker.create_training_job(**config(seconds=30), TrainingJobName=name)
    ti = run_task(dag_id)
    assert ti.state == "success"
    assert [job["TrainingJobName"] for job in jobs(running_endpoint)] == [name]
    assert f"try 1 reattaches to its training job {name}" in task_log()


def test_a_retry_stops_the_earlier_tries_job_and_resumes_from_its_checkpoint(
    running_endpoint: Endpoint, task_log: TaskLog
) -> None:
    dag_id = "pool_retry"
    request = config(seconds=400, CheckpointConfig=CHECKPOINTS)
    request["Tags"].append({"Key": "emulator:checkpoint-interval-seconds", "Value": "10"})
    ti = run_task(
        dag_id,
        retries=1,
        deferrable=False,
        gives_up_once=True,
        stop_wait_seconds=30,
        training_config=request,
    )
    out = task_log()
    assert ti.state == "success", out[-3000:]
    identity = identity_of(dag_id)
    first, second = (identity.training_job_name(n) for n in (1, 2))
    by_name = {job["TrainingJobName"]: job for job in jobs(running_endpoint)}
    assert sorted(by_name) == sorted([first, second])
    assert by_name[first]["TrainingJobStatus"] == "Stopped"
    assert by_name[second]["TrainingJobStatus"] == "Completed"
    assert f"an earlier try's training job {first} is still InProgress: stopping it first" in out
    assert "try 2 resumes from the checkpoint at s3://bucket/checkpoints/pool-training" in out
    assert "Resumed from the checkpoint at s3://bucket/checkpoints/pool-training" in out
    result = ti.xcom_pull(task_ids="train")
    assert (result["attempts"], result["preemptions"]) == (2, 1)
    assert result["training_job_arns"] == [by_name[n]["TrainingJobArn"] for n in (first, second)]
    # the second job trained only what the first had not saved
    assert by_name[second]["TrainingTimeInSeconds"] < 400


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (
            {"training_config": {**config(), "TrainingJobName": "mine"}},
            "TrainingJobName: leave it out; the operator names each try's job",
        ),
        (
            {"training_config": config(instances=2), "pool_slots": 3},
            "ResourceConfig: 2 instances, but pool_slots is 3: pool_slots must be the "
            "instances times the units each holds (2, 4, ...)",
        ),
        (
            {"training_config": {**config(), "RoleArn": 5}},
            "RoleArn",
        ),
    ],
    ids=["named", "slots", "invalid"],
)
def test_a_request_that_could_never_run_fails_at_once_creating_nothing(
    running_endpoint: Endpoint,
    task_log: TaskLog,
    options: dict[str, Any],
    words: str,
) -> None:
    ti = run_task(f"pool_refused_{len(words)}", retries=3, **options)
    assert ti.state == "failed"
    assert ti.try_number == 1, "no retry can help"
    assert words in task_log()
    assert jobs(running_endpoint) == []


def test_slots_per_instance_are_allowed(running_endpoint: Endpoint) -> None:
    ti = run_task("pool_gpus", training_config=config(instances=2, seconds=10), pool_slots=16)
    assert ti.state == "success" and ti.pool_slots == 16


def test_a_failed_job_fails_the_try_with_sagemakers_reason(
    running_endpoint: Endpoint, task_log: TaskLog
) -> None:
    request = config(seconds=600)
    request["Tags"].append({"Key": "emulator:fail-after-seconds", "Value": "30"})
    ti = run_task("pool_failed", training_config=request)
    assert ti.state == "failed"
    out = task_log()
    assert "TrainingJobFailed" in out
    assert "ended Failed: AlgorithmError: emulated failure after 30 seconds" in out


def test_an_account_limit_fails_the_try_for_a_retry(
    aws_env: None, monkeypatch: pytest.MonkeyPatch, task_log: TaskLog
) -> None:
    from tests.emulator.conftest import serve

    for endpoint in serve(None, time_scale=50.0, instance_limits={P4D: 1}):
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.url)
        ti = run_task("pool_limit", training_config=config(instances=2))
        assert ti.state == "failed"
        assert "ResourceLimitExceeded" in task_log()
        assert jobs(endpoint) == []
