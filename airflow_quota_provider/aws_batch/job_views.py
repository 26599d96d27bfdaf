"""Service jobs as AWS reports them, turned into what the view shows and the core reads.

Nothing here decides anything: reasons are AWS's ``statusReason`` split into
its code and message, and a job's place is the snapshot's dispatch order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from airflow_quota_provider.aws_batch.submission import TAG_PREFIX
from airflow_quota_provider.aws_batch.translate import demand_of
from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.reasons import WaitCode
from airflow_quota_provider.core.usage import borrowers
from airflow_quota_provider.core.views import TaskLink

_REASON = re.compile(r"([A-Z][A-Z0-9_]*(?::[A-Z][A-Z0-9_]*)*)(?:: (.*))?", re.DOTALL)
PREEMPTING = WaitCode.PREEMPTION_IN_PROGRESS.value


def split_reason(text: str | None) -> tuple[str | None, str | None]:
    """``("NO_IDLE_CAPACITY", "nlp needs ...")`` from ``"NO_IDLE_CAPACITY: nlp needs ..."``;
    a reason without a leading code is all message."""
    if not text:
        return None, None
    match = _REASON.fullmatch(text)
    if match is None:
        return None, text
    return match.group(1), match.group(2)


def task_link(tags: Mapping[str, str] | None) -> TaskLink | None:
    """The task instance named by the job's ``airflow:*`` tags, with its UI path."""
    tags = tags or {}
    try:
        dag_id = tags[f"{TAG_PREFIX}dag_id"]
        task_id = tags[f"{TAG_PREFIX}task_id"]
        run_id = tags[f"{TAG_PREFIX}run_id"]
        map_index = int(tags.get(f"{TAG_PREFIX}map_index", "-1"))
    except (KeyError, ValueError):
        return None
    path = f"dags/{_part(dag_id)}/runs/{_part(run_id)}/tasks/{_part(task_id)}"
    if map_index >= 0:
        path += f"/mapped/{map_index}"
    return TaskLink(dag_id, task_id, run_id, map_index, path)


def _part(text: str) -> str:
    return quote(text, safe="")


def started_at(job: Mapping[str, Any]) -> int:
    """When a job holding capacity got it: its current attempt's start (it is SCHEDULED)."""
    attempts = job.get("attempts") or ()
    if attempts and attempts[-1].get("startedAt"):
        return int(attempts[-1]["startedAt"])
    return int(job.get("scheduledAt") or job.get("startedAt") or job.get("createdAt") or 0)


def borrowing_jobs(config: QueueConfig, holding: Iterable[Mapping[str, Any]]) -> set[str]:
    """Ids of holding jobs that take their share beyond what it owns
    (:func:`~airflow_quota_provider.core.usage.borrowers`, in the order jobs started)."""
    in_order = sorted(holding, key=lambda j: (started_at(j), j["jobId"]))
    return borrowers(
        config, ((j["jobId"], j.get("quotaShareName") or "", demand_of(j)) for j in in_order)
    )


def running_job(job: Mapping[str, Any], *, borrowing: bool, now_seconds: float) -> RunningJob:
    """The core's view of a job holding capacity; times in seconds."""
    preemption = job.get("preemptionConfiguration") or {}
    summary = job.get("preemptionSummary") or {}
    code, _ = split_reason(job.get("statusReason"))
    return RunningJob(
        id=job["jobId"],
        share=job.get("quotaShareName") or "",
        demand=demand_of(job),
        priority=int(job.get("schedulingPriority") or 0),
        started=min(now_seconds, started_at(job) / 1000),
        submitted=int(job.get("createdAt") or 0) / 1000,
        preemptions=int(summary.get("preemptedAttemptCount") or 0),
        preemption_retries=preemption.get("preemptionRetriesBeforeTermination"),
        terminating=code == PREEMPTING,
        borrowing=borrowing,
    )


def waiting_job(job: Mapping[str, Any]) -> WaitingJob:
    """The core's view of a RUNNABLE job; times in seconds. A job the view only listed
    (beyond the snapshot's first 100) has no priority or preemption settings: 0 and none."""
    preemption = job.get("preemptionConfiguration") or {}
    summary = job.get("preemptionSummary") or {}
    return WaitingJob(
        id=job["jobId"],
        share=job.get("quotaShareName") or "",
        demand=demand_of(job),
        priority=int(job.get("schedulingPriority") or 0),
        submitted=int(job.get("createdAt") or 0) / 1000,
        preemptions=int(summary.get("preemptedAttemptCount") or 0),
        preemption_retries=preemption.get("preemptionRetriesBeforeTermination"),
    )
