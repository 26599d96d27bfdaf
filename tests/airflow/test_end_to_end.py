"""The example DAGs on real Airflow processes, the triggerer killed and restarted mid-run.

An ``airflow api-server``, ``scheduler`` (LocalExecutor), ``dag-processor``
and ``triggerer`` run as separate processes, with the metadata DB on the
local PostgreSQL when one answers at 127.0.0.1:5432 (SQLite otherwise), and
the local endpoint as a process of its own. The story of the demo plays; once
three tasks are deferred the triggerer is SIGKILLed, the fourth DAG is
triggered while it is down, and a new triggerer is started: every job must
still be followed to its end, and none submitted twice.

Time: about 1 min on 2 cores (``tests/DURATIONS.md``: 71 s): the stack (63 s to start with
the example DAGs parsed) and a triggerer killed and started again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.demo.narration import Narrator, NarratorThread
from airflow_quota_provider.demo.processes import Processes, wait_for
from airflow_quota_provider.demo.stack import Stack, StackSettings
from airflow_quota_provider.demo.story import (
    DAG_IDS,
    JOB_QUEUE,
    NLP,
    RELEASE,
    SWEEP,
    TASKS,
    VISION,
)
from airflow_quota_provider.demo.story import Story as DemoStory
from airflow_quota_provider.triggers.batch import KILL_REASON
from tests.emulator.conftest import list_all_jobs, make_client
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


class Run:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.deferred_at_kill: dict[str, str] = {}
        self.lines: list[str] = []

    def between_acts(self, act: str) -> None:
        if act == "in-share":
            self.deferred_at_kill = {
                task.dag_id: self.stack.api.task_states(task.dag_id, self.story.runs[task])[
                    task.task_id
                ]
                for task in (VISION, SWEEP, NLP)
            }
            self.stack.processes.kill("triggerer")
            self.lines.append("triggerer killed")
        if act == "finish":
            self.stack.processes.restart("triggerer")
            self.lines.append("triggerer restarted")

    story: DemoStory


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Run, list[Any], str]]:
    workdir = tmp_path_factory.mktemp("end-to-end")
    for database in postgres_database():
        settings = StackSettings(
            workdir=workdir,
            dags_folder=ROOT / "dags",
            quota_config=ROOT / "dags" / "quota.yaml",
            time_scale=300,
            database_url=database,
            poll_interval=1,
        )
        with Processes(workdir / "logs") as processes, pytest.MonkeyPatch.context() as env:
            stack = Stack(settings, processes)
            for key in ("AIRFLOW_CONN_AWS_DEFAULT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                env.setenv(key, stack.env[key])
            stack.start(DAG_IDS)
            from airflow_quota_provider.hooks.batch import BatchQuotaHook

            run = Run(stack)
            narrator = Narrator(
                BatchQuotaHook(aws_conn_id="aws_default"),
                JOB_QUEUE,
                stack.now_millis,
                say=run.lines.append,
            )
            thread = NarratorThread(narrator)
            thread.start()
            run.story = DemoStory(
                stack, narrator, say=run.lines.append, between_acts=run.between_acts
            )
            try:
                outcomes = run.story.play()
            finally:
                thread.stop()
            jobs = list_all_jobs(make_client(stack.emulator_url, "batch"), JOB_QUEUE)
            yield run, [outcomes, jobs], "postgresql" if database else "sqlite"


def test_every_run_succeeds_after_the_triggerer_was_killed(
    played: tuple[Run, list[Any], str],
) -> None:
    run, (outcomes, _), database = played
    print(f"metadata DB: {database}")
    assert run.deferred_at_kill == {
        "vision_pretrain": "deferred",
        "research_sweep": "deferred",
        "nlp_finetune": "deferred",
    }
    assert "triggerer killed" in run.lines and "triggerer restarted" in run.lines
    assert {o.task.dag_id: o.state for o in outcomes} == dict.fromkeys(DAG_IDS, "success")
    results = {o.task.dag_id: o.result for o in outcomes}
    assert (results["vision_pretrain"]["attempts"], results["vision_pretrain"]["preemptions"]) == (
        2,
        1,
    )
    assert results["research_sweep"]["preemptions"] == 1
    assert results["nlp_finetune"]["preemptions"] == 0
    assert results[RELEASE.dag_id]["status"] == "SUCCEEDED"


def test_no_job_was_submitted_twice(played: tuple[Run, list[Any], str]) -> None:
    _, (outcomes, jobs), _ = played
    assert sorted(job["jobName"] for job in jobs) == sorted(task.job_name for task in TASKS)
    assert {job["jobId"] for job in jobs} == {o.result["job_id"] for o in outcomes}


def test_marking_a_deferred_task_failed_terminates_its_job(
    played: tuple[Run, list[Any], str],
) -> None:
    """A user's "mark failed" reaches the trigger's on_kill, which terminates the service job.

    Airflow calls on_kill only on a trigger a triggerer runs: the task is
    marked failed once its trigger has written to the task's trigger log.
    """
    run, _, _ = played
    stack = run.stack
    stack.set_time_scale(0)  # the job must not end on its own meanwhile
    run_id = stack.api.trigger(NLP.dag_id)
    logs = stack.home / "logs" / f"dag_id={NLP.dag_id}" / f"run_id={run_id}"

    def followed() -> bool:
        return any("service job" in f.read_text() for f in logs.glob("*/*.log.trigger.*.log"))

    wait_for("the trigger to follow the job", followed, 120, stack.processes)
    batch = make_client(stack.emulator_url, "batch")
    (job,) = [
        j
        for j in list_all_jobs(batch, JOB_QUEUE)
        if j["jobName"] == NLP.job_name and j["status"] not in ("SUCCEEDED", "FAILED")
    ]
    stack.api.set_task_state(NLP.dag_id, run_id, NLP.task_id, "failed")
    stack.set_time_scale(stack.settings.time_scale)  # stopping a training job takes time

    def terminated() -> bool:
        status: str = batch.describe_service_job(jobId=job["jobId"])["status"]
        return status == "FAILED"

    wait_for("the service job to be terminated", terminated, 60, stack.processes)
    reason = batch.describe_service_job(jobId=job["jobId"])["statusReason"]
    assert KILL_REASON in reason
