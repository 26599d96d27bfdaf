"""The pools fleet's story (``dags/pools_training.py``), played on a running
:class:`~airflow_quota_provider.demo.stack.Stack` with ``airflow-quota pool-manager``.

1. vision trains on 4 p4d while it owns 2 (it borrows 2), and research starts
   its sweep on its own 2;
2. once vision has saved a checkpoint, nlp needs the 4 it owns: the manager
   reclaims vision's 2 by clearing vision's task, whose training job stops;
3. research's release evaluation (priority 90) preempts research's sweep
   (priority 10) inside research's share;
4. the preempted tasks run again once instances are free, each resuming from
   its checkpoint.

What is said comes from where a user would look: the task instances' states
and notes in Airflow, the training jobs in SageMaker, and ``airflow-quota
status`` for the fleet (each share's use, and every waiting task's reason with
the numbers, as the manager decided it).

Airflow and the manager take a few real seconds to trigger, clear and start a
task, which at an accelerated clock is many emulated minutes: enough for nlp's
job to end before the fleet is shown with vision still waiting. So the
endpoint's clock runs at real time from the moment nlp or the release
evaluation is triggered until it trains, and while the fleet is shown: every
run tells the same story whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.demo.narration import Say
from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack
from airflow_quota_provider.demo.story import Outcome, Task
from airflow_quota_provider.hooks.sagemaker import TrainingTries

VISION = Task("pools_vision_pretrain", "pretrain")
NLP = Task("pools_nlp_finetune", "finetune")
SWEEP = Task("pools_research_sweep", "sweep")
RELEASE = Task("pools_research_release_eval", "release_eval")
DAG_IDS = tuple(task.dag_id for task in (VISION, NLP, SWEEP, RELEASE))
CONFIG_NAME = "pools_quota.yaml"
RECLAIM_AFTER_SECONDS = 15 * 60
"""Emulated training of vision (one 10-minute checkpoint saved) before nlp is triggered."""
IN_SHARE_AFTER_SECONDS = 10 * 60
"""Emulated training of nlp before the release evaluation is triggered."""


@dataclass
class PoolsStory:
    """Plays the story; ``timeout`` bounds each wait, in real seconds.

    :param status: prints ``airflow-quota status`` of the fleet (a command's output).
    """

    stack: Stack
    status: Callable[[], str]
    say: Say = print
    timeout: float = 300.0

    def __post_init__(self) -> None:
        self.runs: dict[Task, str] = {}
        self.tries = TrainingTries(self._sagemaker())

    def play(self) -> list[Outcome]:
        self.trigger(VISION, SWEEP)
        self.wait_training(VISION)
        self.wait_training(SWEEP)
        self.wait_trained(VISION, RECLAIM_AFTER_SECONDS)
        with self.real_time("the fleet is shown and nlp reclaims"):
            self.say("\n" + self.status())
            self.trigger(NLP)
            self.wait_preempted(VISION)
            self.wait_training(NLP)
        self.wait_trained(NLP, IN_SHARE_AFTER_SECONDS)
        with self.real_time("research's release evaluation preempts its sweep"):
            self.trigger(RELEASE)
            self.wait_preempted(SWEEP)
            self.wait_training(RELEASE)
            self.say("\n" + self.status())
        return self.wait_all_done()

    @contextlib.contextmanager
    def real_time(self, why: str) -> Iterator[None]:
        """Run the endpoint's clock at 1x while Airflow and the manager act."""
        scale = self.stack.settings.time_scale
        self.stack.set_time_scale(1)
        self.say(f"(emulated clock at real time while {why})")
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # a dead endpoint is reported by wait_for
                self.stack.set_time_scale(scale)
        self.say(f"(emulated clock running again at {scale:g}x)")

    def trigger(self, *tasks: Task) -> None:
        for task in tasks:
            self.runs[task] = self.stack.api.trigger(task.dag_id)
            self.say(f"triggered DAG {task.dag_id} (run {self.runs[task]})")

    def job(self, task: Task, try_number: int = 1) -> dict[str, Any] | None:
        """The training job of one try of the task, as SageMaker describes it."""
        identity = TaskKey(task.dag_id, self.runs[task], task.task_id, -1)
        return self.tries.job(identity.training_job_name(try_number))

    def wait_training(self, task: Task) -> None:
        def training() -> bool:
            instance = self._instance(task)
            job = self.job(task, int(instance["try_number"]))
            return job is not None and job.get("SecondaryStatus") == "Training"

        wait_for(f"{task.dag_id} to train", training, self.timeout, self.stack.processes)
        instance = self._instance(task)
        job = self.job(task, int(instance["try_number"]))
        assert job is not None
        self.say(
            f"{task.dag_id}: try {instance['try_number']} trains on "
            f"{job['ResourceConfig']['InstanceCount']} p4d (training job "
            f"{job['TrainingJobName']}, task {instance['state']})"
        )

    def wait_trained(self, task: Task, seconds: float) -> None:
        until = self.stack.clock()["now"] + seconds
        wait_for(
            f"{seconds:g} emulated seconds of {task.dag_id}",
            lambda: self.stack.clock()["now"] >= until,
            self.timeout,
            self.stack.processes,
        )

    def wait_preempted(self, task: Task) -> None:
        def ended() -> bool:
            job = self.job(task)
            return job is not None and job["TrainingJobStatus"] not in ("InProgress", "Stopping")

        what = f"{task.dag_id}'s first training job to end"
        wait_for(what, ended, self.timeout, self.stack.processes)
        note = str(self._instance(task).get("note") or "")
        job = self.job(task)
        assert job is not None
        self.say(
            f"{task.dag_id} preempted: its training job {job['TrainingJobName']} "
            f"{job['TrainingJobStatus']} after {job.get('TrainingTimeInSeconds') or 0} s of "
            f"training; the task's note: {note}"
        )

    def wait_all_done(self) -> list[Outcome]:
        def done() -> bool:
            return all(self._state(task) in ("success", "failed") for task in self.runs)

        wait_for("every DAG run to end", done, self.timeout, self.stack.processes, every=1.0)
        outcomes = []
        for task, run_id in self.runs.items():
            state = self._state(task)
            result = None
            if state == "success":
                result = self.stack.api.xcom(task.dag_id, run_id, task.task_id)
            outcomes.append(Outcome(task, run_id, state, result))
            if result and result["preemptions"]:
                last = self.job(task, result["attempts"])
                said = _resumed(last)
                self.say(f"{task.dag_id} ran again and {said}")
        return outcomes

    def _instance(self, task: Task) -> dict[str, Any]:
        path = f"/api/v2/dags/{task.dag_id}/dagRuns/{self.runs[task]}/taskInstances/{task.task_id}"
        return dict(self.stack.api.get(path))

    def _state(self, task: Task) -> str:
        return self.stack.api.run_state(task.dag_id, self.runs[task])

    def _sagemaker(self) -> Any:
        """A SageMaker client of the endpoint, with the stack's AWS settings."""
        import boto3

        return boto3.client(
            "sagemaker", endpoint_url=self.stack.emulator_url, region_name="us-east-1"
        )


def _resumed(job: dict[str, Any] | None) -> str:
    for step in (job or {}).get("SecondaryStatusTransitions") or ():
        message = str(step.get("StatusMessage") or "")
        if "Resumed from the checkpoint" in message:
            return message[message.index("Resumed") :].rstrip(".").replace("Resumed", "resumed")
    return "started over (no checkpoint)"


def status_command(stack: Stack, config: Path, database: str) -> Callable[[], str]:
    """``airflow-quota status`` of the pools fleet, as its user would run it."""

    def run() -> str:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "airflow_quota_provider.cli", "status"),
                *("--config", str(config), "--api-url", stack.api_url),
                *("--username", stack.settings.username, "--database", database),
            ],
            env={**stack.env, "AIRFLOW_QUOTA_API_PASSWORD": stack.settings.password},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return done.stdout.rstrip() or done.stderr.rstrip()

    return run
