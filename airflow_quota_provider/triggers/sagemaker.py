"""Follow one SageMaker training job until it ends; stop it when its task is killed.

What the worker and the triggerer share: :func:`observe` turns one
``DescribeTrainingJob`` into the log lines of its new status transitions and,
once the job has ended, the event; :func:`stop_try` stops a killed or preempted
try's job and says in the task's log by whom and why, and what its checkpoint keeps.

:mod:`~airflow_quota_provider.hooks.sagemaker` brings botocore with it: it is
imported where it is used, in the worker or in the trigger's threads, never while
Airflow imports this module on the triggerer's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import TriggerEvent

from airflow_quota_provider.checkpoints import checkpoint_uri
from airflow_quota_provider.triggers.base import QuotaBaseTrigger
from airflow_quota_provider.triggers.events import TrainingJobEvent, TrainingOutcome

if TYPE_CHECKING:
    from airflow_quota_provider.hooks.sagemaker import TrainingTries

ENDED: dict[str, TrainingOutcome] = {
    "Completed": "success",
    "Failed": "failed",
    "Stopped": "failed",
}


def observe(job: Mapping[str, Any], seen: int) -> tuple[list[str], TrainingJobEvent | None]:
    """The log lines of the job's status transitions after the first ``seen``, and its
    event once it has ended."""
    name = job["TrainingJobName"]
    transitions = job.get("SecondaryStatusTransitions") or []
    lines = [
        f"training job {name}: {step.get('Status')}: {step.get('StatusMessage') or ''}".rstrip()
        for step in transitions[seen:]
    ]
    status = job["TrainingJobStatus"]
    outcome = ENDED.get(status)
    if outcome is None:
        return lines, None
    reason = job.get("FailureReason")
    message = f"training job {name} ended {status}" + (f": {reason}" if reason else "")
    return lines, event_of(job, outcome, message, len(transitions))


def event_of(
    job: Mapping[str, Any], outcome: TrainingOutcome, message: str, seen: int
) -> TrainingJobEvent:
    return TrainingJobEvent(
        status=outcome,
        training_job_name=job["TrainingJobName"],
        training_job_status=job.get("TrainingJobStatus", "UNKNOWN"),
        failure_reason=job.get("FailureReason"),
        transitions_seen=seen,
        message=message,
    )


def stop_try(
    tries: TrainingTries, name: str, wait_seconds: float, log: logging.Logger | Any
) -> None:
    """Stop the training job ``name`` of a try that is being killed, wait (at most
    ``wait_seconds``) until its instances are free, and log why and what is kept."""
    from airflow_quota_provider.hooks.sagemaker import RUNNING_STATUSES

    job = tries.job(name)
    if job is None:
        log.info("no training job %s to stop", name)
        return
    if job["TrainingJobStatus"] not in RUNNING_STATUSES:
        log.info("training job %s had already ended %s", name, job["TrainingJobStatus"])
        return
    why = tries.preemption(job)
    if why:
        log.warning("this try is preempted: %s", why)
    else:
        log.warning("this try is being killed (marked or cleared in Airflow, or its worker stops)")
    # said before the wait: a triggerer may cut a trigger's on_kill short after a second
    uri = checkpoint_uri(job)
    if uri:
        log.info(
            "stopping training job %s; what it saved in its checkpoints at %s is kept, and "
            "the task's next try resumes from there",
            name,
            uri,
        )
    else:
        log.warning(
            "stopping training job %s; without CheckpointConfig the task's next try starts over",
            name,
        )
    job = tries.stop(name, wait_seconds, job=job) or job
    status = job["TrainingJobStatus"]
    if status in RUNNING_STATUSES:
        log.warning(
            "training job %s still %s after %g s; the pool manager keeps its slots taken "
            "until it stops",
            name,
            status,
            wait_seconds,
        )
        return
    log.info(
        "training job %s %s after %s s of training",
        name,
        status,
        job.get("TrainingTimeInSeconds") or 0,
    )


def training_tries(client: Any) -> TrainingTries:
    """:class:`~airflow_quota_provider.hooks.sagemaker.TrainingTries` of a boto3
    SageMaker client, imported here (see the module docstring)."""
    from airflow_quota_provider.hooks.sagemaker import TrainingTries

    return TrainingTries(client)


class Follow:
    """One training job followed poll by poll, in the triggerer or the worker.

    :param name: the training job.
    :param seen: status transitions logged already.
    :param max_poll_failures: polls in a row that may fail before giving up; ``None``: never.
    """

    def __init__(self, name: str, seen: int, max_poll_failures: int | None) -> None:
        self.name = name
        self.seen = seen
        self.max_poll_failures = max_poll_failures
        self.failures = 0
        self.last: Mapping[str, Any] = {"TrainingJobName": name, "TrainingJobStatus": "UNKNOWN"}
        self.read_once = False

    def poll(self, tries: TrainingTries, log: logging.Logger | Any) -> TrainingJobEvent | None:
        """Read the job once, log what is new; its event once it has ended or cannot be read."""
        from airflow_quota_provider.aws_batch.errors import AwsCallFailed, aws_call

        name = self.name
        try:
            with aws_call(f"DescribeTrainingJob {name}"):
                job = tries.job(name)
        except AwsCallFailed as error:
            self.failures += 1
            log.warning("%s", error)
            if self.max_poll_failures is None or self.failures < self.max_poll_failures:
                return None
            return event_of(
                {**self.last, "TrainingJobStatus": "UNKNOWN"},
                "error",
                f"gave up following training job {name}: its status could not be read "
                f"{self.failures} polls in a row (max_poll_failures); it may still be "
                f"running and a retry of the task reattaches to it; last error: {error}",
                self.seen,
            )
        if job is None:
            return event_of(self.last, "error", f"training job {name} does not exist", self.seen)
        self.failures, self.last = 0, job
        if not self.read_once:  # the first answer: the client and its connection work
            log.info("following training job %s: %s", name, job.get("TrainingJobStatus"))
            self.read_once = True
        lines, event = observe(job, self.seen)
        for line in lines:
            log.info("%s", line)
        self.seen += len(lines)
        return event

    def timed_out(self, max_wait_seconds: float | None) -> TrainingJobEvent:
        return event_of(
            self.last,
            "timeout",
            f"stopped waiting for training job {self.name} after {max_wait_seconds} s "
            "(max_wait_seconds); it was left running",
            self.seen,
        )


class TrainingJobTrigger(QuotaBaseTrigger):
    """Fire one :class:`~airflow_quota_provider.triggers.events.TrainingJobEvent` when a
    SageMaker training job ends.

    :param training_job_name: the job to follow.
    :param poll_interval: seconds between ``DescribeTrainingJob`` calls.
    :param transitions_seen: status transitions the task has logged already.
    :param max_wait_seconds: fire ``timeout`` after this long; ``None`` waits forever.
    :param stop_on_kill: stop the job when the deferred task is cleared (preempted) or
        marked failed/succeeded.
    :param stop_wait_seconds: how long ``on_kill`` waits for the job to stop.
    :param max_poll_failures: fire ``error`` once the job's status could not be read
        this many polls in a row; ``None`` keeps trying.
    :param settle_seconds: never fire sooner than this after the trigger started. Airflow
        3.3 can fail a deferred task whose trigger fires before the scheduler has seen
        the worker exit after deferring (apache/airflow#66374, #71580, #72716): a job
        that ends within seconds (one resumed near its end) would fail its task.
    :param aws_conn_id, region_name, verify, botocore_config: the AWS connection.
    """

    def __init__(
        self,
        *,
        training_job_name: str,
        poll_interval: float = 30,
        transitions_seen: int = 0,
        max_wait_seconds: float | None = None,
        stop_on_kill: bool = True,
        stop_wait_seconds: float = 300,
        max_poll_failures: int | None = 10,
        settle_seconds: float = 15,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            aws_conn_id=aws_conn_id,
            region_name=region_name,
            verify=verify,
            botocore_config=botocore_config,
        )
        self.training_job_name = training_job_name
        self.poll_interval = poll_interval
        self.transitions_seen = transitions_seen
        self.max_wait_seconds = max_wait_seconds
        self.stop_on_kill = stop_on_kill
        self.stop_wait_seconds = stop_wait_seconds
        self.max_poll_failures = max_poll_failures
        self.settle_seconds = settle_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return self._serialized(
            training_job_name=self.training_job_name,
            poll_interval=self.poll_interval,
            transitions_seen=self.transitions_seen,
            max_wait_seconds=self.max_wait_seconds,
            stop_on_kill=self.stop_on_kill,
            stop_wait_seconds=self.stop_wait_seconds,
            max_poll_failures=self.max_poll_failures,
            settle_seconds=self.settle_seconds,
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = asyncio.get_running_loop().time()
        follow = Follow(self.training_job_name, self.transitions_seen, self.max_poll_failures)
        try:
            event = await asyncio.wait_for(self._follow(follow), timeout=self.max_wait_seconds)
        except TimeoutError:
            event = follow.timed_out(self.max_wait_seconds)
        early = self.settle_seconds - (asyncio.get_running_loop().time() - started)
        if early > 0:
            self.log.info(
                "training job %s ended %.0f s after this trigger started: reporting it in "
                "%.0f s, once Airflow has surely seen the task defer",
                self.training_job_name,
                self.settle_seconds - early,
                early,
            )
            await asyncio.sleep(early)
        yield TriggerEvent(dict(event))  # type: ignore[no-untyped-call]

    async def _tries(self) -> TrainingTries:
        """The training jobs of the connection: its client shared, built in a thread."""
        return await asyncio.to_thread(training_tries, await self.sagemaker())

    async def _follow(self, follow: Follow) -> TrainingJobEvent:
        tries = await self._tries()
        while True:
            event = await asyncio.to_thread(follow.poll, tries, self.log)
            if event is not None:
                return event
            await asyncio.sleep(self.poll_interval)

    async def on_kill(self) -> None:
        """Stop the training job when the deferred task is cleared (a preemption) or
        marked failed/succeeded; Airflow 3.3 calls this only on such an action, not when
        the triggerer stops or hands the trigger to another triggerer."""
        if not self.stop_on_kill:
            self.log.info(
                "stop_on_kill is False: leaving training job %s running", self.training_job_name
            )
            return
        tries = await self._tries()
        await asyncio.to_thread(
            stop_try, tries, self.training_job_name, self.stop_wait_seconds, self.log
        )
