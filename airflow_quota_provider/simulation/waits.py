"""How long jobs waited in a replay: two figures, told apart by name.

- **total wait** (``total_wait_seconds``): all the time a job spent waiting
  to run: before its first start, plus after every preemption until its next
  start; a job still waiting when the replay ends counts up to the end, and a
  job that ended while waiting (failed, capacity lowered) up to its end. It
  is the figure that says what quota sharing costs a team: a job preempted
  and then left waiting for days waits days, not the minute before it first
  ran. Every job that was submitted and not refused counts.
- **first-start wait** (``first_start_wait_seconds``): only the wait before
  a job's first start, of the jobs that started: the queueing delay a trace
  without preemption records (Helios' published waits are this figure).

Both come from the jobs' attempts alone, so they hold for any replay.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_quota_provider.simulation.simulator import SimJob

NOT_WAITING = frozenset({"PENDING", "REJECTED"})
"""Statuses of jobs that never waited: not submitted yet, or refused at submission."""


def total_wait(job: SimJob, end: float) -> float | None:
    """Seconds ``job`` waited in all (see the module docstring), ``end`` being when the
    replay stopped; ``None`` for a job that never waited."""
    if job.status in NOT_WAITING:
        return None
    stopped = job.finished if job.finished is not None else end
    ran = sum((end if a.end is None else a.end) - a.start for a in job.attempts)
    return max(0.0, stopped - job.spec.submit - ran)


def first_start_wait(job: SimJob) -> float | None:
    """Seconds before ``job`` first started; ``None`` if it never started."""
    return job.attempts[0].start - job.spec.submit if job.attempts else None


def total_waits(jobs: Iterable[SimJob], end: float) -> list[float]:
    """The total wait of every job that waited, sorted."""
    return sorted(w for job in jobs if (w := total_wait(job, end)) is not None)


def first_start_waits(jobs: Iterable[SimJob]) -> list[float]:
    """The first-start wait of every job that started, sorted."""
    return sorted(w for job in jobs if (w := first_start_wait(job)) is not None)
