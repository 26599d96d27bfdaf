"""Follow a service job from the worker (``deferrable=False``) with the trigger's logic."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.triggers.events import ServiceJobEvent
from airflow_quota_provider.triggers.progress import (
    JobWatch,
    escalation_due,
    position_in,
    timed_out,
)


def wait_in_worker(
    hook: BatchQuotaHook,
    watch: JobWatch,
    *,
    poll_interval: float,
    escalate_priority: Mapping[str, Any] | None,
    max_wait_seconds: float | None,
    log: logging.Logger | Any,
) -> ServiceJobEvent:
    """Describe the job every ``poll_interval`` until :class:`JobWatch` says it ended."""
    deadline = time.monotonic() + (max_wait_seconds or 0)
    while True:
        job = hook.describe_service_job(watch.job_id)
        position, now = None, None
        if job["status"] == "RUNNABLE":
            snapshot = hook.get_job_queue_snapshot(job["jobQueue"])
            position = position_in(snapshot, job.get("jobArn") or "", job.get("quotaShareName"))
            now = (snapshot.get("frontOfQueue") or {}).get("lastUpdatedAt")
        lines, event = watch.observe(job, position)
        for line in lines:
            log.info("%s", line)
        if event is not None:
            return event
        priority = escalation_due(job, escalate_priority, now)
        if priority is not None:
            log.info(
                "service job %s RUNNABLE too long: raising its priority from %s to %s",
                watch.job_id,
                job.get("schedulingPriority"),
                priority,
            )
            hook.update_service_job_priority(watch.job_id, priority)
        if max_wait_seconds is not None and time.monotonic() >= deadline:
            return timed_out(job, max_wait_seconds)
        time.sleep(poll_interval)


def checked_poll_failures(value: int | None) -> int | None:
    """``max_poll_failures`` as an operator takes it: a whole number >= 1, or ``None``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(
            f"max_poll_failures must be a whole number >= 1 (polls in a row) or None "
            f"(never give up), got {value!r}"
        )
    return value
