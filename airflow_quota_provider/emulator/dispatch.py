"""Service jobs through the quota engine: the core decides, this module applies.

One :class:`~airflow_quota_provider.core.QueueState` per job queue
(recorded job by job for saving, :mod:`.queue_states`). After
anything that could change a decision (a submission, a training job ending,
a config change) the queue is marked dirty, and :meth:`Dispatcher.settle`
settles it with the core's settle loop, applying each decision:

- **admit**: the job leaves the queue, its attempt's SageMaker training job
  is created (``AWSBatch<name><hex>``), the job is SCHEDULED;
- **preempt**: the job's running record is marked terminating, its
  ``statusReason`` becomes ``PREEMPTION_IN_PROGRESS: ...`` and its training
  job is stopped; the capacity is freed only once it is ``Stopped``, and the
  job requeued or failed as :mod:`~airflow_quota_provider.emulator.attempts`
  says (:meth:`Dispatcher.training_changed`);
- **fail**: the job ends FAILED with the core's reason.

Waiting jobs get the core's reason (``NO_IDLE_CAPACITY: ...``) as their
``statusReason``, looked up from the last cycle when they are described.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

# the module itself, not through the package: the package's __init__ leads here
import airflow_quota_provider.emulator.attempts as attempts
from airflow_quota_provider.core import (
    Admission,
    Decisions,
    Failure,
    Preemption,
    RunningJob,
    WaitingJob,
)
from airflow_quota_provider.core.reasons import PREEMPTION_HEADLINES
from airflow_quota_provider.core.settle import settle
from airflow_quota_provider.emulator.queue_config import dispatching, queue_config
from airflow_quota_provider.emulator.queue_states import Placement, RecordedQueueState
from airflow_quota_provider.emulator.store import ServiceJob, TrainingJob
from airflow_quota_provider.emulator.tables import Table
from airflow_quota_provider.emulator.timers import Timer

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.account import Account
    from airflow_quota_provider.emulator.training import TrainingRuntime

SUBMIT_DELAY_SECONDS = 1.0
"""A job is SUBMITTED this long before it enters its queue (RUNNABLE)."""

ENQUEUE = "enqueue"
"""Timer: a SUBMITTED job enters its queue."""
RECHECK = "recheck"
"""Timer: a queue's decisions may change now (a minimum runtime has passed)."""


class Dispatcher:
    def __init__(self, world: Account, training: TrainingRuntime) -> None:
        self.world = world
        self.training = training
        self.states: dict[str, RecordedQueueState] = {}
        self.placements: Table[Placement] = Table()
        """Where each job the queues hold is: their states job by job, for the state file."""
        self.last: dict[str, Decisions] = {}
        self.dirty: set[str] = set()
        self.rechecks: dict[str, float] = {}
        self.cycles = 0
        world.timers.on(ENQUEUE, self._enqueue)
        world.timers.on(RECHECK, self.dirty.add)
        world.timers.on(attempts.ATTEMPT_TIMEOUT, self._time_out)

    # -- queues -------------------------------------------------------------------

    def queue_changed(self, queue_arn: str) -> RecordedQueueState:
        """Re-read a queue's config after its environments, policy or shares changed."""
        queue = self.world.store.queues[queue_arn]
        config = queue_config(self.world.store, queue)
        state = self.states.get(queue_arn)
        if state is None:
            state = self.states[queue_arn] = RecordedQueueState(config, queue_arn, self.placements)
        else:
            state.config = config
        self.dirty.add(queue_arn)
        return state

    def queue_deleted(self, queue_arn: str) -> None:
        state = self.states.pop(queue_arn, None)
        if state is not None:
            state.forget()
        self.last.pop(queue_arn, None)
        self.dirty.discard(queue_arn)

    def state(self, queue_arn: str) -> RecordedQueueState:
        return self.states[queue_arn]

    # -- jobs ---------------------------------------------------------------------

    def submit(self, job: ServiceJob) -> None:
        self.world.after(SUBMIT_DELAY_SECONDS, Timer(ENQUEUE, (job.id,)))

    def _enqueue(self, job_id: str) -> None:
        job = self.world.store.jobs.get(job_id)
        if job is not None and job.status == "SUBMITTED" and job.queue_arn in self.states:
            self.requeue(job)

    def requeue(self, job: ServiceJob) -> None:
        """Put a job (back) in its share's queue at its original place."""
        job.status = "RUNNABLE"
        job.status_reason = None
        job.runnable_since = self.world.now_ms
        self.states[job.queue_arn].add_waiting(waiting_job(job))
        self.dirty.add(job.queue_arn)

    def release(self, job: ServiceJob) -> None:
        """Free the capacity a job's ended attempt held."""
        state = self.states.get(job.queue_arn)
        if state is not None and state.running_job(job.id) is not None:
            state.remove_running(job.id)
            self.dirty.add(job.queue_arn)

    def reprioritize(self, job: ServiceJob, priority: int) -> None:
        job.priority = priority
        state = self.states.get(job.queue_arn)
        if state is None:
            return
        waiting = state.waiting_job(job.id)
        if waiting is not None:
            state.remove_waiting(job.id)
            state.add_waiting(replace(waiting, priority=priority))
        running = state.running_job(job.id)
        if running is not None:
            state.replace_running(replace(running, priority=priority))
        self.dirty.add(job.queue_arn)

    def terminate(self, job: ServiceJob, reason: str) -> None:
        """End a job: at once if it waits, once its training job has stopped if it runs."""
        if job.done:
            return
        state = self.states.get(job.queue_arn)
        if job.status in ("SUBMITTED", "RUNNABLE"):
            if state is not None and state.waiting_job(job.id) is not None:
                state.remove_waiting(job.id)
                self.dirty.add(job.queue_arn)
            attempts.finish(self.world, job, "FAILED", reason, terminated=True)
            return
        self.stop_attempt(job, "terminate", reason)

    def stop_attempt(self, job: ServiceJob, cause: str, detail: str) -> None:
        """Stop a running job's training job; what follows depends on ``cause``."""
        job.stop_cause, job.stop_detail = cause, detail
        state = self.states.get(job.queue_arn)
        running = state.running_job(job.id) if state is not None else None
        if state is not None and running is not None and not running.terminating:
            state.replace_running(replace(running, terminating=True))
        training = self.world.store.training_jobs[job.attempts[-1].training_job_name]
        if training.status == "InProgress":
            self.training.stop(training)

    def _time_out(self, job_id: str, name: str, seconds: int) -> None:
        """Stop attempt ``name`` of a job whose ``attemptDurationSeconds`` have passed."""
        expired = attempts.time_out(self.world, job_id, name, seconds)
        if expired is not None:
            job, reason = expired
            self.stop_attempt(job, "timeout", reason)

    def wait_reason(self, job: ServiceJob) -> str | None:
        """Why a RUNNABLE job waits, from the queue's last cycle."""
        if job.status != "RUNNABLE":
            return None
        queue = self.world.store.queues.get(job.queue_arn)
        if queue is not None and not dispatching(self.world.store, queue):
            return (
                f"SERVICE_ENVIRONMENT_DISABLED: no service environment of job queue "
                f"{queue.name} is ENABLED; jobs wait until one is"
            )
        decisions = self.last.get(job.queue_arn)
        if decisions is None:
            return None
        wait = decisions.waiting.get(job.id)
        return None if wait is None else f"{wait.code.value}: {wait.message}"

    def training_changed(self, training: TrainingJob) -> None:
        job = self.world.store.jobs.get(training.owner) if training.owner else None
        if job is None or not job.attempts:
            return
        if job.attempts[-1].training_job_name != training.name:
            return
        ended = attempts.training_changed(self.world, job, training)
        if ended is not None:
            self.release(job)
        if ended is attempts.AttemptEnd.REQUEUE:
            self.requeue(job)

    # -- cycles -------------------------------------------------------------------

    def settle(self) -> None:
        while self.dirty:
            self._settle_queue(self.dirty.pop())

    def _settle_queue(self, queue_arn: str) -> None:
        state = self.states.get(queue_arn)
        queue = self.world.store.queues.get(queue_arn)
        if state is None or queue is None or not dispatching(self.world.store, queue):
            return
        settled = settle(state, self.world.now, _Applier(self))
        self.cycles += settled.cycles
        if settled.cycles:
            self.last[queue_arn] = settled.decisions
            self._plan_recheck(queue_arn, settled.decisions.recheck_at)

    def _plan_recheck(self, queue_arn: str, at: float | None) -> None:
        if at is None or at <= self.world.now or self.rechecks.get(queue_arn) == at:
            return
        self.rechecks[queue_arn] = at
        self.world.at(at, Timer(RECHECK, (queue_arn,)))


class _Applier:
    """Applies a queue's decisions to its service jobs (the settle loop's Applier)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.world = dispatcher.world

    def fail(self, waiting: WaitingJob, failure: Failure, now: float) -> None:
        job = self.world.store.jobs[waiting.id]
        attempts.finish(self.world, job, "FAILED", f"{failure.code.value}: {failure.message}")

    def admit(self, waiting: WaitingJob, admission: Admission, now: float) -> RunningJob | None:
        job = self.world.store.jobs[waiting.id]
        launch = attempts.prepare(self.world, job)
        if isinstance(launch, str):
            attempts.finish(self.world, job, "FAILED", launch)
            return None
        attempts.launch(self.world, self.dispatcher.training, job, launch)
        borrowing = any(admission.borrowed.values())
        running = waiting.started(now, launch.resumed_work, borrowing=borrowing)
        # the checkpoint interval is known only once the training job is prepared
        return replace(running, checkpoint_interval=launch.checkpoint_interval)

    def preempt(self, running: RunningJob, preemption: Preemption, now: float) -> None:
        job = self.world.store.jobs[running.id]
        headline = PREEMPTION_HEADLINES[preemption.kind]
        job.status_reason = f"PREEMPTION_IN_PROGRESS: {headline}"
        job.preemption_fails = preemption.fails
        self.dispatcher.stop_attempt(job, "preempt", f"{headline}: {preemption.message}")


def waiting_job(job: ServiceJob) -> WaitingJob:
    config = job.preemption_config or {}
    return WaitingJob(
        job.id,
        job.share,
        job.demand,
        job.priority,
        job.submitted,
        preemptions=job.preemptions,
        preemption_retries=config.get("preemptionRetriesBeforeTermination"),
        checkpoint_interval=None,
    )
