"""The one loop that applies the core's decisions at one instant.

Whoever keeps a :class:`QueueState` (the simulator in virtual time, the local
AWS endpoint on its clock, the pool manager against Airflow) settles it after
anything that could change a decision: a submission, a job ending, a victim
stopped, a config change, a protection expiring. :func:`settle` runs
:func:`~airflow_quota_provider.core.cycle.schedule` until a cycle decides
nothing, keeps the state's books for every decision, and hands each one to
the caller's :class:`Applier`, which does what the decision means where it
lives (create a training job, clear a task instance, log a timeline entry).

The books, the same for every caller:

- **fail**: the job leaves its queue, then ``Applier.fail``;
- **admit**: the job leaves its queue, ``Applier.admit`` starts it and says how
  it runs (e.g. the work it resumes from); it then holds its capacity;
- **preempt**: the victim is marked terminating (its capacity still held), then
  ``Applier.preempt`` begins stopping it. Once it has stopped, now or later,
  the caller reports it with :func:`stopped`, which frees its capacity, keeps
  the work its last checkpoint saved and puts it back at its place.

Stopping rule: a cycle that decides nothing ends the instant; so does a state
with no waiting job (a cycle decides only for the heads of queues).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from airflow_quota_provider.core.cycle import schedule
from airflow_quota_provider.core.decisions import Admission, Decisions, Failure, Preemption
from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.state import QueueState

MAX_CYCLES = 10_000
"""More cycles than this at one instant means the decisions do not converge (thrash)."""


class Applier(Protocol):
    """What a caller does with each decision; :func:`settle` has already updated the state."""

    def admit(self, job: WaitingJob, admission: Admission, now: float) -> RunningJob | None:
        """Start ``job``. Return it as it runs (usually ``job.started(now, resumed_work,
        borrowing=...)``), or ``None`` when it could not start and has ended instead."""

    def preempt(self, job: RunningJob, preemption: Preemption, now: float) -> None:
        """Begin stopping ``job`` (already marked terminating). Once it has stopped, at
        once or later, report it with :func:`stopped`."""

    def fail(self, job: WaitingJob, failure: Failure, now: float) -> None:
        """``job`` has left its queue for good."""


class NotSettled(RuntimeError):
    """The cycles at one instant never ended with one that decides nothing."""


@dataclass(frozen=True)
class Settled:
    """How an instant ended: ``decisions`` of its last cycle (the reasons of every job
    left waiting, and when to settle again if nothing else happens), ``cycles`` run."""

    decisions: Decisions
    cycles: int


@dataclass(frozen=True)
class Stopped:
    """A preempted job once it has stopped: the seconds of work its checkpoints kept, and
    the job as it waits again (``None`` when its preemption failed it)."""

    job: RunningJob
    work_kept: float
    requeued: WaitingJob | None


def settle(
    state: QueueState,
    now: float,
    applier: Applier,
    *,
    on_cycle: Callable[[Decisions], None] | None = None,
) -> Settled:
    """Run cycles at ``now`` until one decides nothing, applying each through ``applier``;
    ``on_cycle`` sees each cycle's decisions once they are applied."""
    decisions = Decisions()
    for cycles in range(MAX_CYCLES + 1):
        if not state.waiting_count:
            return Settled(decisions, cycles)
        decisions = schedule(state, now)
        decided = _apply(state, now, decisions, applier)
        if on_cycle is not None:
            on_cycle(decisions)
        if not decided:
            return Settled(decisions, cycles + 1)
    raise NotSettled(f"scheduling did not settle at t={now:g} after {MAX_CYCLES} cycles")


def _apply(state: QueueState, now: float, decisions: Decisions, applier: Applier) -> bool:
    """Apply one cycle's decisions; whether it decided anything."""
    for failure in decisions.fail:
        applier.fail(state.remove_waiting(failure.job_id), failure, now)
    for admission in decisions.admit:
        running = applier.admit(state.remove_waiting(admission.job_id), admission, now)
        if running is not None:
            state.add_running(running)
    for preemption in decisions.preempt:
        victim = state.running_job(preemption.job_id)
        assert victim is not None, f"preempted job {preemption.job_id} is not running"
        victim = replace(victim, terminating=True)
        state.replace_running(victim)
        applier.preempt(victim, preemption, now)
    return bool(decisions.fail or decisions.admit or decisions.preempt)


def stopped(state: QueueState, job_id: str, now: float, *, fails: bool) -> Stopped:
    """A preempted job has stopped at ``now``: free its capacity and, unless its
    preemption ``fails`` it, put it back at its place to resume from its last checkpoint."""
    job = state.remove_running(job_id)
    requeued = None if fails else job.requeued()
    if requeued is not None:
        state.add_waiting(requeued)
    return Stopped(job, job.work_kept(now), requeued)
