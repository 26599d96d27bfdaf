"""What a service job is doing, told once per change; shared by the trigger and the worker loop.

A :class:`JobWatch` is fed each fresh ``DescribeServiceJob`` answer (and the
job's place in the queue snapshot while it is RUNNABLE). It returns the log
lines worth writing — status changes, position and reason while RUNNABLE,
each preemption, each attempt's training job — and, when following should
stop, the :class:`~airflow_quota_provider.triggers.events.ServiceJobEvent`.
It keeps no clock of its own: times come from AWS's answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_quota_provider.triggers.events import Outcome, ServiceJobEvent


@dataclass(frozen=True)
class Position:
    """Where a RUNNABLE job stands in ``GetJobQueueSnapshot``."""

    in_queue: int | None
    """1-based place among the queue's first 100 RUNNABLE jobs; ``None`` if not among them."""
    first_in_share: bool


def position_in(snapshot: Mapping[str, Any], job_arn: str, share: str | None) -> Position:
    front = (snapshot.get("frontOfQueue") or {}).get("jobs") or []
    arns = [entry.get("jobArn") for entry in front]
    shares = (snapshot.get("frontOfQuotaShares") or {}).get("quotaShares") or {}
    heads = shares.get(share or "") or []
    first = bool(heads) and heads[0].get("jobArn") == job_arn
    return Position(arns.index(job_arn) + 1 if job_arn in arns else None, first)


@dataclass
class JobWatch:
    """What has been told about one job so far.

    :param stop_on_preemption: end with a ``preempted`` event at the first
        preemption seen instead of waiting for AWS to requeue the job.
    :param preempted_before: preemptions the job had when the task took it on
        (submitted it, or reattached to it); only later ones stop it.
    """

    job_id: str
    stop_on_preemption: bool = False
    preempted_before: int = 0
    status: str | None = None
    reason: str | None = None
    position: Position | None = None
    training_jobs: list[str] = field(default_factory=list)
    preempted_attempts: set[str] = field(default_factory=set)

    def observe(
        self, job: Mapping[str, Any], position: Position | None = None
    ) -> tuple[list[str], ServiceJobEvent | None]:
        """The log lines ``job`` (a ``DescribeServiceJob`` answer) calls for, and the end event."""
        lines = self._attempts(job) + self._preemptions(job) + self._status(job, position)
        status = job["status"]
        if status == "SUCCEEDED":
            return lines, outcome_of(job, "success", f"service job {self.job_id} SUCCEEDED")
        if status == "FAILED":
            return lines, outcome_of(job, "failed", f"service job {self.job_id} FAILED")
        if self.stop_on_preemption and preemptions_of(job) > self.preempted_before:
            return lines, outcome_of(job, "preempted", f"service job {self.job_id} was preempted")
        return lines, None

    def _status(self, job: Mapping[str, Any], position: Position | None) -> list[str]:
        status, reason = job["status"], job.get("statusReason")
        lines = []
        if status != self.status or reason != self.reason:
            before = f"{self.status} -> " if self.status else ""
            because = f": {reason}" if reason else ""
            lines.append(f"service job {self.job_id} {before}{status}{because}")
        if status == "RUNNABLE" and position is not None and position != self.position:
            lines.append(f"service job {self.job_id} RUNNABLE, {describe_position(position, job)}")
        self.status, self.reason = status, reason
        self.position = position if status == "RUNNABLE" else None
        return lines

    def _attempts(self, job: Mapping[str, Any]) -> list[str]:
        lines = []
        for number, arn in enumerate(training_job_arns(job), start=1):
            if arn not in self.training_jobs:
                self.training_jobs.append(arn)
                lines.append(f"attempt {number} of service job {self.job_id}: training job {arn}")
        return lines

    def _preemptions(self, job: Mapping[str, Any]) -> list[str]:
        summary = job.get("preemptionSummary") or {}
        count = int(summary.get("preemptedAttemptCount") or 0)
        limit = (job.get("preemptionConfiguration") or {}).get("preemptionRetriesBeforeTermination")
        lines = []
        for attempt in summary.get("recentPreemptedAttempts") or ():
            arn = (attempt.get("serviceResourceId") or {}).get("value", "")
            if arn in self.preempted_attempts:
                continue
            self.preempted_attempts.add(arn)
            number = self._attempt_number(job, arn)
            left = "unlimited" if limit is None else str(max(0, int(limit) - count))
            lines.append(
                f"preempted at {when(attempt.get('stoppedAt'))}: attempt {number} "
                f"(training job {arn}) of service job {self.job_id}: "
                f"{attempt.get('statusReason') or 'no reason given'}; "
                f"{count} preemption(s) so far, retries left: {left}"
            )
        return lines

    def _attempt_number(self, job: Mapping[str, Any], arn: str) -> int | str:
        arns = training_job_arns(job)
        return arns.index(arn) + 1 if arn in arns else "?"


def describe_position(position: Position, job: Mapping[str, Any]) -> str:
    share = job.get("quotaShareName") or "-"
    place = (
        f"position {position.in_queue} in the queue"
        if position.in_queue is not None
        else "beyond the first 100 of the queue"
    )
    head = "first" if position.first_in_share else "not first"
    return f"{place}, {head} in share {share}"


def preemptions_of(job: Mapping[str, Any]) -> int:
    return int((job.get("preemptionSummary") or {}).get("preemptedAttemptCount") or 0)


def training_job_arns(job: Mapping[str, Any]) -> list[str]:
    arns = []
    for attempt in job.get("attempts") or ():
        value = (attempt.get("serviceResourceId") or {}).get("value")
        if value:
            arns.append(str(value))
    return arns


def outcome_of(job: Mapping[str, Any], status: Outcome, message: str) -> ServiceJobEvent:
    """The event for ``job`` as it stands, with its counts and durations in seconds."""
    attempts = job.get("attempts") or []
    run_ms = sum(
        max(0, int(a.get("stoppedAt") or 0) - int(a.get("startedAt") or 0))
        for a in attempts
        if a.get("startedAt") and a.get("stoppedAt")
    )
    end = job.get("stoppedAt") or max((a.get("stoppedAt") or 0 for a in attempts), default=0)
    created = int(job.get("createdAt") or 0)
    total_ms = max(0, int(end) - created) if end and created else 0
    reason = job.get("statusReason")
    if status == "preempted":
        # why it was preempted, not what its requeued job is doing now (the job's own
        # reason says that, and has none in the instant between the two)
        recent = (job.get("preemptionSummary") or {}).get("recentPreemptedAttempts") or []
        reason = (recent[-1].get("statusReason") if recent else None) or reason
    return ServiceJobEvent(
        status=status,
        job_id=job["jobId"],
        job_arn=job.get("jobArn") or "",
        job_name=job.get("jobName") or "",
        job_status=job["status"],
        status_reason=reason,
        attempts=len(attempts),
        preemptions=preemptions_of(job),
        training_job_arns=training_job_arns(job),
        queued_seconds=max(0, total_ms - run_ms) / 1000,
        run_seconds=run_ms / 1000,
        message=f"{message}: {reason}" if reason else message,
    )


def timed_out(job: Mapping[str, Any], max_wait_seconds: float) -> ServiceJobEvent:
    """The ``timeout`` event of a job still not ended after ``max_wait_seconds``."""
    message = (
        f"service job {job['jobId']} still {job['status']} after {max_wait_seconds:g} s "
        f"(max_wait_seconds)"
    )
    return outcome_of(job, "timeout", message)


def when(millis: Any) -> str:
    if not millis:
        return "an unknown time"
    return datetime.fromtimestamp(int(millis) / 1000, tz=UTC).isoformat()


def escalation_due(
    job: Mapping[str, Any], escalate: Mapping[str, Any] | None, now_millis: int | None
) -> int | None:
    """The priority to raise ``job`` to now, if its starvation guard says so.

    ``escalate`` is ``{"after_seconds": N, "priority": P}``: a job RUNNABLE and
    submitted at least N seconds ago (AWS's clock: the snapshot's time) with a
    priority below P. Reading the priority from AWS makes it idempotent.
    """
    if not escalate or now_millis is None or job.get("status") != "RUNNABLE":
        return None
    target = int(escalate["priority"])
    waited = (now_millis - int(job.get("createdAt") or now_millis)) / 1000
    if (
        waited >= float(escalate["after_seconds"])
        and int(job.get("schedulingPriority") or 0) < target
    ):
        return target
    return None
