"""How long each job of an AWS Batch queue will run, from what the view already read.

A pure function of the service jobs one read of the queue holds (its active jobs and
those created in the view's window, ``hours``, 6 by default): no AWS call of its own.

- **History**: the earlier runs of the same job name (the operator's default name is
  ``<dag_id>-<task_id>``, the same for every run of a task): each SUCCEEDED job of
  that name in the window that was never preempted counts how long it held capacity,
  from its attempt's start (the view's ``started_at``) to ``stoppedAt``; a preempted
  one does not count (its attempts do not add up to its work: it resumed from a
  checkpoint, or lost work). The jobs of that name holding capacity count for what
  they have run so far (:class:`~airflow_quota_provider.core.durations.DurationHistory`).
  The statistic is :func:`~airflow_quota_provider.core.durations.estimate_duration`'s:
  the median, the 10th to 90th percentile as the range.
- **Bound**: the request's ``StoppingCondition.MaxRuntimeInSeconds`` (SageMaker stops
  the training job there), for jobs the view described (holding capacity, or among the
  snapshot's first 100 waiting).
- **No history**: :data:`~airflow_quota_provider.core.durations.NO_HISTORY`, a guess.

A running job's elapsed time is the forecast's to apply (it knows when each started).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_quota_provider.aws_batch.job_views import started_at
from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES
from airflow_quota_provider.core.durations import (
    DurationEstimate,
    DurationHistory,
    estimate_duration,
)


def job_durations(jobs: Iterable[Mapping[str, Any]], now: int) -> dict[str, DurationEstimate]:
    """Each waiting or holding job's estimate, by job id; ``now`` in epoch ms."""
    jobs = list(jobs)
    finished: dict[str, list[float]] = {}
    running: dict[str, list[float]] = {}
    for job in jobs:
        name = str(job.get("jobName") or "")
        status = job.get("status")
        if status == "SUCCEEDED":
            seconds = run_seconds(job)
            if seconds is not None:
                finished.setdefault(name, []).append(seconds)
        elif status in HOLDING_STATUSES:
            running.setdefault(name, []).append(max(0.0, (now - started_at(job)) / 1000))
    histories: dict[str, DurationHistory] = {}
    estimates: dict[str, DurationEstimate] = {}
    for job in jobs:
        if job.get("status") != "RUNNABLE" and job.get("status") not in HOLDING_STATUSES:
            continue
        name = str(job.get("jobName") or "")
        history = histories.get(name)
        if history is None:
            history = histories[name] = DurationHistory(
                finished.get(name, ()), running.get(name, ())
            )
        estimates[job["jobId"]] = estimate_duration(history, max_runtime=max_runtime(job))
    return estimates


def run_seconds(job: Mapping[str, Any]) -> float | None:
    """How long a SUCCEEDED job ran, if it ran once (never preempted) and says when."""
    if int((job.get("preemptionSummary") or {}).get("preemptedAttemptCount") or 0):
        return None
    started, stopped = started_at(job), job.get("stoppedAt")
    if not started or not stopped or int(stopped) < started:
        return None
    return (int(stopped) - started) / 1000


def max_runtime(job: Mapping[str, Any]) -> float | None:
    """The request's ``StoppingCondition.MaxRuntimeInSeconds``, if the job was described."""
    try:
        payload = json.loads(job.get("serviceRequestPayload") or "{}")
        seconds = payload["StoppingCondition"]["MaxRuntimeInSeconds"]
    except (ValueError, KeyError, TypeError):
        return None
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None
