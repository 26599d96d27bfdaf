"""Replays a scenario through the scheduling core in virtual time.

Each moment at which something happens (a submission, a job finishing, a
preempted job stopping, a config change, a protection expiring) the simulator
applies it, then runs cycles until one decides nothing more. Only the core
decides; the simulator only keeps time and applies the decisions, exactly as
the local AWS endpoint does with a real clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_quota_provider.core import (
    Admission,
    Decisions,
    Failure,
    Preemption,
    QueueState,
    RunningJob,
    WaitingJob,
    check_submission,
)
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.reasons import FailureCode, PreemptionKind
from airflow_quota_provider.core.settle import settle, stopped
from airflow_quota_provider.simulation.figures import duration
from airflow_quota_provider.simulation.scenario import ConfigEvent, JobSpec, Scenario, apply_event

_FINISH, _STOP, _CONFIG, _SUBMIT, _RECHECK = range(5)
"""Event kinds, in the order they are applied at the same instant: a job that
finishes when its preemption completes has succeeded; a submission sees the
config changed at the same instant."""


@dataclass
class Attempt:
    start: float
    borrowed: dict[str, int]
    end: float | None = None
    outcome: str | None = None
    preemption: PreemptionKind | None = None
    preempted_by: str | None = None
    work_lost: float = 0.0


@dataclass
class SimJob:
    spec: JobSpec
    status: str = "PENDING"
    reason: str | None = None
    message: str | None = None
    finished: float | None = None
    work_done: float = 0.0
    preemptions: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    serial: int = 0
    """Bumped at every start, so a stale finish event of an earlier attempt is ignored."""


@dataclass(frozen=True)
class TimelineEntry:
    at: float
    event: str
    job: str
    share: str
    detail: str


@dataclass
class Result:
    jobs: dict[str, SimJob]
    timeline: list[TimelineEntry]
    end: float
    used_unit_seconds: dict[str, float]
    capacity_unit_seconds: dict[str, float]
    preemptions: int
    cycles: int


class Observer(Protocol):
    """Told the state each time the clock moves on, before anything changes it, e.g. a
    :class:`~airflow_quota_provider.simulation.metrics.Meter`."""

    def elapse(
        self, start: float, end: float, state: QueueState, pending: Mapping[str, Mapping[str, int]]
    ) -> None:
        """``state``, with ``pending`` instances per share and unit waiting, held from
        ``start`` until ``end``."""


class Simulator:
    """One run of a :class:`Scenario`; ``run`` may be called once."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        record_timeline: bool = True,
        on_progress: Callable[[float], None] | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.scenario = scenario
        self.config: QueueConfig = scenario.config
        self.state = QueueState(self.config)
        self.jobs = {spec.id: SimJob(spec) for spec in scenario.jobs}
        self.events: list[tuple[float, int, int, Any]] = []
        self.sequence = 0
        self.now = 0.0
        self.timeline: list[TimelineEntry] = []
        self.record = record_timeline
        self.on_progress = on_progress
        self.observer = observer
        self.pending: dict[str, dict[str, int]] = {}
        """Instances per share and unit asked for by waiting jobs."""
        self.used: dict[str, float] = dict.fromkeys(self.config.capacity, 0.0)
        self.offered: dict[str, float] = dict.fromkeys(self.config.capacity, 0.0)
        self.preemption_count = 0
        self.cycles = 0
        self.last_wait: dict[str, str] = {}
        self.last_decisions: Decisions | None = None
        for spec in scenario.jobs:
            self._push(spec.submit, _SUBMIT, spec.id)
        for event in scenario.events:
            self._push(event.at, _CONFIG, event)

    def _push(self, at: float, kind: int, payload: Any) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, kind, self.sequence, payload))

    def _log(self, event: str, job: str, share: str, detail: str) -> None:
        if self.record:
            self.timeline.append(TimelineEntry(self.now, event, job, share, detail))

    def run(self, until: float | None = None) -> Result:
        while self.events:
            at = self.events[0][0]
            if until is not None and at > until:
                break
            self._advance(at)
            while self.events and self.events[0][0] == at:
                _, kind, _, payload = heapq.heappop(self.events)
                self._apply(kind, payload)
            self._settle()
            if self.on_progress is not None:
                self.on_progress(at)
        if until is not None and until > self.now:
            self._advance(until)
        self._explain_waiting()
        return Result(
            self.jobs,
            self.timeline,
            self.now,
            self.used,
            self.offered,
            self.preemption_count,
            self.cycles,
        )

    def _explain_waiting(self) -> None:
        """Give the jobs still waiting at the end the reason of the last cycle."""
        if self.last_decisions is None:
            return
        reasons = self.last_decisions.waiting
        for job in self.jobs.values():
            if job.status == "RUNNABLE" and job.spec.id in reasons:
                wait = reasons[job.spec.id]
                job.reason, job.message = wait.code.value, wait.message

    def _advance(self, to: float) -> None:
        elapsed = to - self.now
        if elapsed > 0:
            if self.observer is not None:
                self.observer.elapse(self.now, to, self.state, self.pending)
            for unit, used in self.state_total().items():
                self.used[unit] = self.used.get(unit, 0.0) + used * elapsed
            for unit, capacity in self.config.capacity.items():
                self.offered[unit] = self.offered.get(unit, 0.0) + capacity * elapsed
        self.now = to

    def state_total(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for usage in self.state.usage_by_share().values():
            for unit, count in usage.items():
                total[unit] = total.get(unit, 0) + count
        return total

    def _apply(self, kind: int, payload: Any) -> None:
        if kind == _SUBMIT:
            self._submit(self.jobs[payload])
        elif kind == _FINISH:
            job_id, serial = payload
            job = self.jobs[job_id]
            if job.serial == serial and job.status == "RUNNING":
                self._finish(job)
        elif kind == _STOP:
            job_id, serial, kind_, by, fails = payload
            job = self.jobs[job_id]
            if job.serial == serial and job.status == "RUNNING":
                self._stop(job, kind_, by, fails)
        elif kind == _CONFIG:
            self._change_config(payload)

    def _settle(self) -> None:
        settled = settle(self.state, self.now, self)
        if not settled.cycles:
            return
        self.cycles += settled.cycles
        self.last_decisions = settled.decisions
        self._note_waits(settled.decisions)
        recheck = settled.decisions.recheck_at
        if recheck is not None and recheck > self.now:
            self._push(recheck, _RECHECK, None)

    # -- the core's decisions (the simulator is the settle loop's Applier) ------------------

    def admit(self, waiting: WaitingJob, admission: Admission, now: float) -> RunningJob:
        job = self.jobs[waiting.id]
        self._wait_less(waiting)
        borrowed = dict(admission.borrowed)
        job.status = "RUNNING"
        job.serial += 1
        job.attempts.append(Attempt(now, borrowed))
        self._push(now + job.spec.duration - job.work_done, _FINISH, (waiting.id, job.serial))
        lent = ", ".join(f"{n} {u}" for u, n in sorted(borrowed.items()) if n)
        detail = f"attempt {len(job.attempts)}" + (f", borrows {lent}" if lent else "")
        self._log("start", waiting.id, waiting.share, detail)
        self.last_wait.pop(waiting.id, None)
        return waiting.started(now, job.work_done, borrowing=any(borrowed.values()))

    def preempt(self, running: RunningJob, preemption: Preemption, now: float) -> None:
        job = self.jobs[running.id]
        self.preemption_count += 1
        detail = f"{preemption.kind.value} for {preemption.preemptor}: {preemption.message}"
        self._log("preempt", running.id, running.share, detail)
        stop = (running.id, job.serial, preemption.kind, preemption.preemptor, preemption.fails)
        if self.scenario.preemption_delay <= 0:
            self._stop(job, *stop[2:])
        else:
            self._push(now + self.scenario.preemption_delay, _STOP, stop)

    def fail(self, waiting: WaitingJob, failure: Failure, now: float) -> None:
        self._wait_less(waiting)
        self._end(self.jobs[waiting.id], "FAILED", failure.code.value, failure.message)

    def _note_waits(self, decisions: Decisions) -> None:
        if not self.record:
            return
        for wait in decisions.waiting.heads():
            if self.last_wait.get(wait.job_id) != wait.message:
                self.last_wait[wait.job_id] = wait.message
                self._log("wait", wait.job_id, wait.share, f"{wait.code.value}: {wait.message}")

    def _submit(self, job: SimJob) -> None:
        spec = job.spec
        waiting = _waiting(job)
        refusal = check_submission(self.config, waiting)
        if refusal is not None:
            self._log("submit", spec.id, spec.share, _describe(spec))
            self._end(job, "REJECTED", refusal.code.value, refusal.message)
            return
        job.status = "RUNNABLE"
        self.state.add_waiting(waiting)
        self._count_pending(waiting)
        self._log("submit", spec.id, spec.share, _describe(spec))

    def _finish(self, job: SimJob) -> None:
        self.state.remove_running(job.spec.id)
        attempt = job.attempts[-1]
        attempt.end, attempt.outcome = self.now, "SUCCEEDED"
        job.work_done = job.spec.duration
        self._end(job, "SUCCEEDED", None, None)

    def _stop(self, job: SimJob, kind: PreemptionKind, by: str, fails: bool) -> None:
        spec = job.spec
        result = stopped(self.state, spec.id, self.now, fails=fails)
        attempt = job.attempts[-1]
        attempt.end, attempt.outcome = self.now, "PREEMPTED"
        attempt.preemption, attempt.preempted_by = kind, by
        lost = result.job.progress(self.now) - result.work_kept
        attempt.work_lost = lost * sum(spec.demand.values())
        job.work_done = result.work_kept
        job.preemptions += 1
        if result.requeued is None:
            retries = spec.preemption_retries
            message = f"preempted {job.preemptions} times; preemption_retries is {retries}"
            self._end(job, "FAILED", FailureCode.PREEMPTION_RETRIES_EXHAUSTED.value, message)
            return
        job.status = "RUNNABLE"
        self._count_pending(result.requeued)
        resumes = f"resumes from {duration(result.work_kept)} of work"
        self._log("requeue", spec.id, spec.share, resumes)

    def _count_pending(self, job: WaitingJob) -> None:
        pending = self.pending.setdefault(job.share, {})
        for unit, count in job.demand.items():
            pending[unit] = pending.get(unit, 0) + count

    def _wait_less(self, job: WaitingJob) -> None:
        pending = self.pending[job.share]
        for unit, count in job.demand.items():
            pending[unit] -= count

    def _end(self, job: SimJob, status: str, reason: str | None, message: str | None) -> None:
        job.status, job.reason, job.message = status, reason, message
        job.finished = self.now
        detail = status if reason is None else f"{status} {reason}: {message}"
        self._log("end", job.spec.id, job.spec.share, detail)

    def _change_config(self, event: ConfigEvent) -> None:
        self.config = apply_event(self.config, event)
        self.state.config = self.config
        self._log("config", "-", str(event.changes.get("name", "-")), _changes(event))


def _waiting(job: SimJob) -> WaitingJob:
    spec = job.spec
    return WaitingJob(
        spec.id,
        spec.share,
        spec.demand,
        spec.priority,
        spec.submit,
        preemptions=job.preemptions,
        preemption_retries=spec.preemption_retries,
        checkpoint_interval=spec.checkpoint_interval,
    )


def _describe(spec: JobSpec) -> str:
    demand = ", ".join(f"{n} {u}" for u, n in sorted(spec.demand.items()))
    return f"{demand}, priority {spec.priority}, {duration(spec.duration)} of work"


def _changes(event: ConfigEvent) -> str:
    changes = ", ".join(f"{k}={v}" for k, v in event.changes.items() if k != "name")
    return f"{event.action}: {changes}"
