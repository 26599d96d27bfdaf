"""The example DAGs of ``dags/``: they import cleanly and, run together, tell three stories.

The four DAGs run at once, each with ``dag.test()`` in a process of its own,
against one local endpoint serving ``dags/quota.yaml`` with its clock stopped.
The test moves the emulated clock and starts each DAG when the story needs
it, so every decision is the same on every run:

- vision pre-trains on 10 p4d while it owns 6: it borrows 4 idle ones;
- nlp fine-tunes on the 8 p4d it owns: AWS reclaims the 4 lent to vision by
  preempting vision's job, which later resumes from its checkpoint;
- research's urgent release evaluation preempts research's own sweep.

Time: about 1 min on 2 cores (``tests/DURATIONS.md``): mostly its stack of real Airflow
processes (setup), then the story at the endpoint's accelerated clock.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.demo.story import (
    DAG_IDS,
    IN_SHARE_AFTER_SECONDS,
    NLP,
    RECLAIM_AFTER_SECONDS,
    RELEASE,
    SWEEP,
    VISION,
)
from tests.airflow.dag_runner import dag_bag
from tests.emulator.conftest import Endpoint, list_all_jobs, serve

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
QUEUE = "ml-training"
STEP_SECONDS = 60.0
"""Emulated seconds the clock moves each tick once every DAG has started."""


def test_example_dags_import_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the bag adds the bundle's root for good

    from airflow_quota_provider.airflow_pools.fleet import Fleet
    from airflow_quota_provider.operators.batch import QuotaTrainingOperator
    from airflow_quota_provider.operators.sagemaker import PoolTrainingOperator

    bag = dag_bag(DAGS)
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == [
        "nlp_finetune",
        "pools_nlp_finetune",
        "pools_research_release_eval",
        "pools_research_sweep",
        "pools_vision_pretrain",
        "research_release_eval",
        "research_sweep",
        "vision_pretrain",
    ]
    shares = {share.name for share in load_config(DAGS / "quota.yaml").shares}
    pools = Fleet.of(load_config(DAGS / "pools_quota.yaml")).shares
    for dag in bag.dags.values():
        for task in dag.tasks:
            if dag.dag_id.startswith("pools_"):
                # a pools fleet counted in p4d: a task's pool_slots is its InstanceCount
                assert isinstance(task, PoolTrainingOperator)
                assert task.pool in pools
                count = task.training_config["ResourceConfig"]["InstanceCount"]
                assert task.pool_slots == count
                assert "TrainingJobName" not in task.training_config
                continue
            assert isinstance(task, QuotaTrainingOperator)
            assert task.job_queue == QUEUE
            assert task.quota_share in shares


@dataclass
class Story:
    endpoint: Endpoint
    results: dict[str, dict[str, Any]]
    logs: dict[str, str]
    usage_while_borrowing: dict[str, Any]

    def job(self, name: str) -> dict[str, Any]:
        (summary,) = [j for j in list_all_jobs(self.endpoint.batch) if j["jobName"] == name]
        job: dict[str, Any] = self.endpoint.batch.describe_service_job(jobId=summary["jobId"])
        return job

    def xcom(self, dag_id: str, task_id: str) -> dict[str, Any]:
        assert "tasks" in self.results[dag_id], self.logs[dag_id][-3000:]
        task = self.results[dag_id]["tasks"][task_id]
        assert task["state"] == "success", self.logs[dag_id][-3000:]
        result: dict[str, Any] = task["xcom"]
        return result


class DagProcess:
    """One DAG run by ``dag.test()`` in a subprocess with its own home and metadata DB."""

    def __init__(self, dag_id: str, workdir: Path, template_db: Path, url: str) -> None:
        self.dag_id = dag_id
        home = workdir / dag_id
        home.mkdir()
        shutil.copy(template_db, home / "airflow.db")
        self.out = home / "result.json"
        self.log = home / "output.log"
        self.go = home / "go"
        endpoint = urllib.parse.quote(url, safe="")
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            # four processes parse the DAGs at once: on a busy 2-core machine the first
            # import (Airflow's own modules) can take longer than the default 30 s
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "AIRFLOW__QUOTA_PROVIDER__POLL_INTERVAL": "0.2",
            "AIRFLOW_CONN_AWS_DEFAULT": (
                f"aws://testing:testing@/?region_name=us-east-1&endpoint_url={endpoint}"
            ),
            "PYTHONPATH": str(ROOT),
        }
        with self.log.open("w") as output:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.airflow.dag_runner",
                    dag_id,
                    str(self.out),
                    str(self.go),
                ],
                cwd=ROOT,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def start(self) -> None:
        """Let the (already started) process run its DAG."""
        self.go.touch()

    def done(self) -> bool:
        return self.process.poll() is not None

    def result(self) -> dict[str, Any]:
        """The run's states and XComs; a process that failed gives its exit code instead."""
        if self.process.returncode != 0:
            return {"state": f"process exited with code {self.process.returncode}"}
        result: dict[str, Any] = json.loads(self.out.read_text())
        return result

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def wait_until(
    what: str,
    check: Callable[[], bool],
    processes: list[DagProcess],
    tick: Callable[[], object] = lambda: None,
) -> None:
    """Poll ``check`` (calling ``tick`` between polls) until true; fail if a DAG ends first
    (or after 300 s: the first submission waits for four processes to start)."""
    deadline = time.monotonic() + 300
    while not check():
        for process in processes:
            if process.done():
                raise AssertionError(
                    f"{process.dag_id} ended while waiting for {what}:\n"
                    + process.log.read_text()[-3000:]
                )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        tick()
        time.sleep(0.1)


def status_of(endpoint: Endpoint, name: str) -> str | None:
    for job in list_all_jobs(endpoint.batch):
        if job["jobName"] == name:
            status: str = job["status"]
            return status
    return None


@pytest.fixture(scope="module")
def story(airflow_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    template = Path(os.environ["AIRFLOW_HOME"]) / "airflow.db"
    workdir = tmp_path_factory.mktemp("example-dags")
    config = load_config(DAGS / "quota.yaml")
    processes: list[DagProcess] = []
    for endpoint in serve(config):
        try:
            usage = play(endpoint, workdir, template, processes)
            yield Story(
                endpoint,
                {p.dag_id: p.result() for p in processes},
                {p.dag_id: p.log.read_text() for p in processes},
                usage,
            )
        finally:
            for process in processes:
                process.stop()


def play(
    endpoint: Endpoint, workdir: Path, template: Path, processes: list[DagProcess]
) -> dict[str, Any]:
    """Start each DAG when the story needs it; move the clock until every DAG has ended."""
    for dag_id in DAG_IDS:
        processes.append(DagProcess(dag_id, workdir, template, endpoint.url))
    by_id = {process.dag_id: process for process in processes}

    def start(dag_id: str) -> None:
        by_id[dag_id].start()

    def reach(name: str, *statuses: str) -> None:
        """Wait for job ``name`` to be submitted, then move time in small steps to ``statuses``."""
        wait_until(f"{name} submitted", lambda: status_of(endpoint, name) is not None, processes)
        wait_until(
            f"{name} {' or '.join(statuses)}",
            lambda: status_of(endpoint, name) in statuses,
            processes,
            tick=lambda: endpoint.advance(2),
        )

    start(VISION.dag_id)
    start(SWEEP.dag_id)
    reach(VISION.job_name, "RUNNING")
    usage = occupancy(endpoint)
    reach(SWEEP.job_name, "RUNNING")
    endpoint.advance(RECLAIM_AFTER_SECONDS)  # vision saves two checkpoints
    start(NLP.dag_id)
    reach(NLP.job_name, "RUNNING")
    endpoint.advance(IN_SHARE_AFTER_SECONDS)
    start(RELEASE.dag_id)
    reach(RELEASE.job_name, "RUNNING")
    deadline = time.monotonic() + 240
    while not all(p.done() for p in processes):
        assert time.monotonic() < deadline, "the example DAGs did not end"
        endpoint.advance(STEP_SECONDS)
        time.sleep(0.1)
    return usage


def occupancy(endpoint: Endpoint) -> dict[str, Any]:
    """Each share's use per instance type, as the hook computes it from AWS's answers."""
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ENDPOINT_URL", endpoint.url)
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        hook = BatchQuotaHook(aws_conn_id=None, region_name="us-east-1")
        return {
            share: {unit: asdict(o) for unit, o in units.items()}
            for share, units in hook.share_usage(QUEUE).items()
        }


def test_every_example_dag_succeeds(story: Story) -> None:
    for dag_id, result in story.results.items():
        assert result["state"] == "success", story.logs[dag_id][-3000:]


def test_vision_borrows_idle_capacity(story: Story) -> None:
    vision = story.usage_while_borrowing["vision"]["ml.p4d.24xlarge"]
    assert (vision["used"], vision["owned"], vision["borrowed"]) == (10, 6, 4)


def test_nlp_reclaims_and_vision_resumes_from_its_checkpoint(story: Story) -> None:
    nlp = story.xcom("nlp_finetune", "finetune")
    assert (nlp["status"], nlp["attempts"], nlp["preemptions"]) == ("SUCCEEDED", 1, 0)
    vision = story.xcom("vision_pretrain", "pretrain")
    assert (vision["status"], vision["attempts"], vision["preemptions"]) == ("SUCCEEDED", 2, 1)
    assert len(vision["training_job_arns"]) == 2
    # two hours of work, plus at most one checkpoint interval lost, plus start-up
    assert 7200 <= vision["run_seconds"] < 7200 + 15 * 60 + 300
    job = story.job(VISION.job_name)
    (preempted,) = job["preemptionSummary"]["recentPreemptedAttempts"]
    assert f"for job {nlp['job_id']}" in preempted["statusReason"], preempted
    log = story.logs["vision_pretrain"]
    assert "preempted at" in log and "retries left: 2" in log
    assert f"attempt 2 of service job {vision['job_id']}" in log
    second = story.endpoint.sagemaker.describe_training_job(
        TrainingJobName=vision["training_job_arns"][1].rsplit("/", 1)[-1]
    )
    messages = " ".join(t.get("StatusMessage", "") for t in second["SecondaryStatusTransitions"])
    assert "Resumed from the checkpoint" in messages


def test_release_eval_preempts_research_sweep_in_share(story: Story) -> None:
    urgent = story.xcom("research_release_eval", "release_eval")
    assert (urgent["status"], urgent["preemptions"]) == ("SUCCEEDED", 0)
    assert urgent["queued_seconds"] < 5 * 60
    sweep = story.xcom("research_sweep", "sweep")
    assert (sweep["status"], sweep["attempts"], sweep["preemptions"]) == ("SUCCEEDED", 2, 1)
    job = story.job(SWEEP.job_name)
    (preempted,) = job["preemptionSummary"]["recentPreemptedAttempts"]
    assert preempted["statusReason"].startswith("In-share preemption"), preempted
    assert f"job {urgent['job_id']} (priority 9000)" in preempted["statusReason"]
    assert "preempted at" in story.logs["research_sweep"]
