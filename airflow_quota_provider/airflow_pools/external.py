"""Work a preempted task started outside Airflow, and holding its GPUs until it is gone.

Clearing a task makes Airflow kill its process (the operator's ``on_kill`` runs)
or, for a deferred task, cancel its trigger (the trigger's ``on_kill`` runs).
A preemptible operator stops its external work there, e.g. a SageMaker
training job. But Airflow stops counting a cleared task against its pool at
once: a deferred task has no process to wait for, and its trigger's
``on_kill`` runs after the clear. So the manager asks the outside world itself:
every victim of a recent preemption whose external work was not yet seen gone
is looked up, and while it still runs the victim keeps holding its slots (as a
task being stopped), so no preemptor's pool grows into GPUs that are still
taken.

A victim's external work is found by name: the try that was stopped names its
training job (:meth:`~airflow_quota_provider.aws_batch.submission.TaskKey.training_job_name`).
A task without one (not found) holds nothing beyond its own process; but a victim
cleared while its worker was still starting shows ``restarting`` until its process is
gone, and that process may yet create its job (and defer, which Airflow refuses, so no
``on_kill`` stops the job): it stays watched until Airflow no longer shows that try.

A victim's job that goes on ``InProgress`` for :data:`STOP_AFTER_SECONDS` after the
manager first saw it so is stopped by the manager: the try's own stop did not come.
Airflow 3.3's triggerer cancels a cleared task's trigger again at each pass of its
loop while the trigger's ``on_kill`` runs, so an ``on_kill`` that takes more than a
second (building its AWS client on a loaded host) is cut short before it stops the
job; a worker that cannot reach the api-server never learns of the clear. Nothing
else would stop the job before it ends (or the reconciler's grace has passed), and
the victim's slots, held while it runs, would stay closed to the preemptor.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from packaging.version import Version

from airflow_quota_provider.aws_batch.errors import AwsCallFailed, aws_call
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.hooks.sagemaker import RUNNING_STATUSES, TrainingTries

log = logging.getLogger(__name__)

STOP_AFTER_SECONDS = 20.0
"""How long a victim's training job may go on ``InProgress`` (not ``Stopping``) once the
manager has seen it so, before the manager stops it: far longer than the try's own stop
takes (the worker learns of the clear at its next heartbeat, the triggerer at once)."""


TRIGGER_ON_KILL = Version("3.3")
"""The first Airflow whose triggerer calls a trigger's ``on_kill`` when its deferred task is
cleared or marked failed: before it, nothing stops a deferred victim's job but the manager,
which then stops it as it preempts."""


@dataclass(frozen=True, slots=True)
class Victim:
    """A preempted try: the task instance and the try whose work was stopped."""

    key: TaskKey
    try_number: int

    @property
    def training_job_name(self) -> str:
        key = self.key
        identity = key
        return identity.training_job_name(self.try_number)


class ExternalWorkUnknown(AwsCallFailed):
    """Whether a victim's external work still runs could not be found out."""


class ExternalWork(Protocol):
    """Tells which preempted tries still have work running outside Airflow."""

    def running(self, victims: Iterable[Victim]) -> set[Victim]:
        """The ``victims`` whose external work still holds capacity.

        :raises ExternalWorkUnknown: when it cannot be told (the manager then grows no pool).
        """
        ...

    def tell(self, victim: Victim, note: str) -> None:
        """Record on the victim's external work, if it has any, who preempts it and why,
        before its task is cleared (so the task's log can say so); never raises."""
        ...

    def stop(self, victim: Victim) -> None:
        """Stop the victim's external work, if it has any, without waiting; never raises."""
        ...


class SageMakerTrainingJobs:
    """Victims' SageMaker training jobs, looked up by name with ``DescribeTrainingJob``;
    one still ``InProgress`` ``stop_after`` seconds after it was first seen so is stopped.

    :param client: a boto3 SageMaker client.
    :param stop_after: seconds (on ``clock``) a victim's job may stay ``InProgress``.
    """

    def __init__(
        self,
        client: Any,
        stop_after: float = STOP_AFTER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.stop_after = stop_after
        self.clock = clock
        self._in_progress_since: dict[Victim, float] = {}

    def running(self, victims: Iterable[Victim]) -> set[Victim]:
        tries = TrainingTries(self.client)
        found: set[Victim] = set()
        in_progress: set[Victim] = set()
        for victim in victims:
            name = victim.training_job_name
            with aws_call(f"DescribeTrainingJob {name}", ExternalWorkUnknown):
                job = tries.job(name)
            if job is None:
                continue
            status = job.get("TrainingJobStatus")
            if status in RUNNING_STATUSES:
                log.info("%s: its training job %s is still %s", victim.key, name, status)
                found.add(victim)
            if status == "InProgress":
                in_progress.add(victim)
                self._stop_if_left(tries, victim, job)
        self._in_progress_since = {
            victim: since
            for victim, since in self._in_progress_since.items()
            if victim in in_progress
        }
        return found

    def _stop_if_left(self, tries: TrainingTries, victim: Victim, job: dict[str, Any]) -> None:
        now = self.clock()
        since = self._in_progress_since.setdefault(victim, now)
        if now - since < self.stop_after:
            return
        name = victim.training_job_name
        log.warning(
            "%s: its training job %s is still InProgress %g s after the manager saw it so "
            "(its try's own stop did not come); stopping it",
            victim.key,
            name,
            now - since,
        )
        try:
            tries.stop(name, 0, job=job)
        except Exception as error:  # the next cycle asks again
            log.warning("could not stop training job %s: %s", name, error)

    def stop(self, victim: Victim) -> None:
        name = victim.training_job_name
        try:
            if TrainingTries(self.client).stop(name, 0) is not None:
                log.info("%s: stopping its training job %s", victim.key, name)
        except Exception as error:  # the next cycles stop it after stop_after
            log.warning("could not stop training job %s: %s", name, error)

    def tell(self, victim: Victim, note: str) -> None:
        name = victim.training_job_name
        try:
            if TrainingTries(self.client).tell(name, note):
                log.info(
                    "%s: tagged its training job %s with why it is preempted", victim.key, name
                )
        except Exception as error:  # the preemption matters more than its label
            log.warning("could not tag training job %s with its preemption: %s", name, error)
