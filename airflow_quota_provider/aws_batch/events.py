"""Preemptions, read from each job's ``preemptionSummary``: who, by whom, why, work lost.

A preempted attempt's ``statusReason`` is the headline AWS documents
(``Cross-share preemption triggered to reclaim borrowed capacity``) or one of
this provider's engine, followed by the engine's message, which names the
preemptor as ``job <id>``. AWS's own reasons name none: then ``preemptor``
is ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from airflow_quota_provider.aws_batch.job_views import task_link
from airflow_quota_provider.aws_batch.translate import demand_of
from airflow_quota_provider.checkpoints import described_interval
from airflow_quota_provider.core.jobs import RunningJob
from airflow_quota_provider.core.reasons import PREEMPTION_HEADLINES
from airflow_quota_provider.core.views import PreemptionEvent

_PREEMPTOR = re.compile(r"\bjob ([A-Za-z0-9_.:/-]+?)[,;)]?(?:\s|$)")


def kind_of(reason: str) -> str | None:
    """``RECLAIM``, ``IN_SHARE`` or ``CAPACITY_REDUCED`` from a preemption's headline."""
    for kind, headline in PREEMPTION_HEADLINES.items():
        if headline in reason:
            return kind.value
    return None


def preemptor_of(reason: str) -> str | None:
    """The job a preemption was made for, when the reason names it."""
    match = _PREEMPTOR.search(reason)
    return match.group(1) if match else None


def preemption_events(
    job: Mapping[str, Any], console_url: Callable[[str], str]
) -> list[PreemptionEvent]:
    """The recent preempted attempts of one ``DescribeServiceJob`` answer, oldest first."""
    summary = job.get("preemptionSummary") or {}
    interval = described_interval(job)
    demand = demand_of(job)
    events = []
    for attempt in summary.get("recentPreemptedAttempts") or ():
        started, stopped = int(attempt.get("startedAt") or 0), int(attempt.get("stoppedAt") or 0)
        reason = str(attempt.get("statusReason") or "")
        lost = RunningJob(
            job["jobId"], "", demand, 0, started / 1000, checkpoint_interval=interval
        ).work_at_risk(stopped / 1000)
        events.append(
            PreemptionEvent(
                job_id=job["jobId"],
                name=job.get("jobName") or "",
                share=job.get("quotaShareName") or "",
                started_at=started,
                stopped_at=stopped,
                kind=kind_of(reason),
                preemptor=preemptor_of(reason),
                reason=reason,
                work_lost=lost,
                checkpointed=interval is not None,
                training_job=str((attempt.get("serviceResourceId") or {}).get("value") or ""),
                task=task_link(job.get("tags")),
                console_url=console_url(job["jobId"]),
            )
        )
    return sorted(events, key=lambda e: e.stopped_at)
