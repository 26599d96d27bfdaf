"""The example DAGs' story, played on a running :class:`~airflow_quota_provider.demo.stack.Stack`.

1. vision pre-trains on 10 p4d while it owns 6 (it borrows 4), and research
   starts a long sweep on its own 8 g5;
2. 30 emulated minutes later nlp needs the 8 p4d it owns: AWS reclaims the 4
   lent to vision by preempting vision's job, which waits and later resumes
   from its checkpoint;
3. 10 minutes after that, research's urgent release evaluation preempts
   research's own sweep (in-share preemption).

Airflow takes a few real seconds to start a task, which at an accelerated
clock is many emulated minutes; so the endpoint's clock is paused from the
moment a DAG is triggered until its job is submitted, and every run tells
the same story whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from airflow_quota_provider.demo.narration import Narrator, Say
from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack

JOB_QUEUE = "ml-training"


@dataclass(frozen=True)
class Task:
    dag_id: str
    task_id: str

    @property
    def job_name(self) -> str:
        return f"{self.dag_id}-{self.task_id}"


VISION = Task("vision_pretrain", "pretrain")
SWEEP = Task("research_sweep", "sweep")
NLP = Task("nlp_finetune", "finetune")
RELEASE = Task("research_release_eval", "release_eval")
TASKS = (VISION, SWEEP, NLP, RELEASE)
RECLAIM_AFTER_SECONDS = 30 * 60
"""Emulated time vision runs (two 15-minute checkpoints) before nlp is triggered."""
IN_SHARE_AFTER_SECONDS = 10 * 60
"""Emulated time nlp runs before the release evaluation is triggered."""
DAG_IDS = tuple(task.dag_id for task in TASKS)


@dataclass(frozen=True)
class Outcome:
    """How one DAG run ended, with its training task's XCom (``None`` if it failed)."""

    task: Task
    run_id: str
    state: str
    result: dict[str, Any] | None


class Story:
    """Plays the story; ``timeout`` bounds each wait, in real seconds.

    ``between_acts`` is called with ``reclaim`` before nlp is triggered, with
    ``in-share`` before the release evaluation is, and with ``finish`` before
    waiting for every run to end (the end-to-end test kills and restarts the
    triggerer there).
    """

    def __init__(
        self,
        stack: Stack,
        narrator: Narrator,
        say: Say = print,
        timeout: float = 300.0,
        between_acts: Callable[[str], None] = lambda act: None,
    ) -> None:
        self.stack = stack
        self.narrator = narrator
        self.say = say
        self.timeout = timeout
        self.between_acts = between_acts
        self.runs: dict[Task, str] = {}

    def play(self) -> list[Outcome]:
        self.trigger(VISION, SWEEP)
        self.wait_status(VISION, "RUNNING")
        self.wait_status(SWEEP, "RUNNING")
        self.wait_emulated(RECLAIM_AFTER_SECONDS)
        self.between_acts("reclaim")
        self.trigger(NLP)
        self.wait_status(NLP, "RUNNING")
        self.wait_emulated(IN_SHARE_AFTER_SECONDS)
        self.between_acts("in-share")
        self.trigger(RELEASE)
        self.wait_status(RELEASE, "RUNNING")
        self.between_acts("finish")
        return self.wait_all_done()

    def trigger(self, *tasks: Task) -> None:
        """Trigger each task's DAG with the clock paused until its job is submitted."""
        scale = self.stack.settings.time_scale
        self.stack.set_time_scale(0)
        self.say(f"(emulated clock paused while Airflow starts {_names(tasks)})")
        try:
            for task in tasks:
                self.runs[task] = self.stack.api.trigger(task.dag_id)
                self.say(f"triggered DAG {task.dag_id} (run {self.runs[task]})")
            for task in tasks:
                wait_for(
                    f"{task.job_name} to be submitted",
                    partial(self.submitted, task),
                    self.timeout,
                    self.stack.processes,
                )
        finally:
            with contextlib.suppress(OSError):  # a dead endpoint is reported by wait_for
                self.stack.set_time_scale(scale)
        self.say(f"(emulated clock running again at {scale:g}x)")

    def submitted(self, task: Task) -> bool:
        return self.status(task) is not None

    def status(self, task: Task) -> str | None:
        for job in list(self.narrator.jobs.values()):  # the narrator's thread adds to it
            if job.get("jobName") == task.job_name:
                return str(job["status"])
        return None

    def wait_status(self, task: Task, status: str) -> None:
        wait_for(
            f"{task.job_name} to be {status}",
            lambda: self.status(task) == status,
            self.timeout,
            self.stack.processes,
        )

    def wait_emulated(self, seconds: float) -> None:
        until = self.stack.clock()["now"] + seconds
        wait_for(
            f"{seconds:g} emulated seconds",
            lambda: self.stack.clock()["now"] >= until,
            self.timeout,
            self.stack.processes,
        )

    def wait_all_done(self) -> list[Outcome]:
        def done() -> bool:
            return all(self._state(task) in ("success", "failed") for task in self.runs)

        wait_for("every DAG run to end", done, self.timeout, self.stack.processes, every=1.0)
        return [self.outcome(task) for task in self.runs]

    def outcome(self, task: Task) -> Outcome:
        run_id = self.runs[task]
        state = self._state(task)
        result = None
        if state == "success":
            result = self.stack.api.xcom(task.dag_id, run_id, task.task_id)
        return Outcome(task, run_id, state, result)

    def _state(self, task: Task) -> str:
        return self.stack.api.run_state(task.dag_id, self.runs[task])


def summary_table(outcomes: list[Outcome]) -> str:
    """One line per DAG run: its end, its job's attempts, preemptions and times."""
    header = ("DAG", "state", "job", "attempts", "preempted", "queued min", "ran min")
    rows = [header]
    for outcome in outcomes:
        result = outcome.result or {}
        rows.append(
            (
                outcome.task.dag_id,
                outcome.state,
                str(result.get("status", "-")),
                str(result.get("attempts", "-")),
                str(result.get("preemptions", "-")),
                _minutes(result.get("queued_seconds")),
                _minutes(result.get("run_seconds")),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _minutes(seconds: Any) -> str:
    return "-" if seconds is None else f"{float(seconds) / 60:.0f}"


def _names(tasks: tuple[Task, ...]) -> str:
    return " and ".join(task.dag_id for task in tasks)
