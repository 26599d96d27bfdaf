"""One job queue's view, assembled from what AWS answered (a pure function of those answers).

Shares' figures come from :func:`airflow_quota_provider.core.occupancy`,
waiting jobs are in the snapshot's dispatch order with AWS's reasons, next
victims come from :mod:`~airflow_quota_provider.core.victims`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_quota_provider.aws_batch.durations import job_durations
from airflow_quota_provider.aws_batch.events import preemption_events
from airflow_quota_provider.aws_batch.job_views import (
    borrowing_jobs,
    running_job,
    split_reason,
    started_at,
    task_link,
    waiting_job,
)
from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES
from airflow_quota_provider.aws_batch.translate import demand_of, usage_from_jobs
from airflow_quota_provider.aws_batch.utilization import utilization
from airflow_quota_provider.core.jobs import RunningJob
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.occupancy import Occupancy, occupancy
from airflow_quota_provider.core.predictions import Predictions, predict
from airflow_quota_provider.core.share_views import share_view
from airflow_quota_provider.core.state import QueueState
from airflow_quota_provider.core.usage import unit_totals
from airflow_quota_provider.core.victims import next_victims
from airflow_quota_provider.core.views import (
    JobView,
    NextVictim,
    PreemptionEvent,
    QueueView,
    ShareView,
    UnitCapacity,
)

ConsoleUrl = Callable[[str], str]


@dataclass
class AwsReading:
    """What the backend read of one queue at ``now`` (epoch ms, AWS's clock).

    ``jobs`` are the queue's active jobs and those created in the window, by
    id: full ``DescribeServiceJob`` answers where the backend described the
    job, else ``ListServiceJobs`` summaries.
    """

    queue: Mapping[str, Any]
    config: QueueConfig
    snapshot: Mapping[str, Any]
    jobs: dict[str, Mapping[str, Any]]
    now: int
    hours: float = 6.0
    buckets: int = 24


def dispatch_order(snapshot: Mapping[str, Any]) -> list[str]:
    """Job ids of the snapshot's front of queue, in dispatch order."""
    jobs = (snapshot.get("frontOfQueue") or {}).get("jobs") or ()
    return [str(entry["jobArn"]).rsplit("/", 1)[-1] for entry in jobs if entry.get("jobArn")]


def build(reading: AwsReading, console_url: ConsoleUrl) -> QueueView:
    config = reading.config
    holding = [j for j in reading.jobs.values() if j.get("status") in HOLDING_STATUSES]
    table = occupancy(config, usage_from_jobs(holding))
    borrowers = borrowing_jobs(config, holding)
    now_s = reading.now / 1000
    running_jobs = [
        running_job(j, borrowing=j["jobId"] in borrowers, now_seconds=now_s) for j in holding
    ]
    victims = next_victims(config, running_jobs, table, now_s)
    order = dispatch_order(reading.snapshot)
    place = {job_id: index + 1 for index, job_id in enumerate(order)}
    waiting_raw = [j for j in reading.jobs.values() if j.get("status") == "RUNNABLE"]
    waiting_raw.sort(key=lambda j: (place.get(j["jobId"], len(place) + 1), j.get("createdAt") or 0))

    def view(job: Mapping[str, Any]) -> JobView:
        return job_view(job, reading.now, place, job["jobId"] in borrowers, victims, console_url)

    running = sorted(
        (view(j) for j in holding), key=lambda v: (v.share, -(v.priority or 0), v.started_at or 0)
    )
    events = [
        _with_preemptor(e, reading.jobs)
        for j in reading.jobs.values()
        for e in preemption_events(j, console_url)
    ]
    events.sort(key=lambda e: e.stopped_at, reverse=True)
    queue_view = QueueView(
        name=str(reading.queue["jobQueueName"]),
        arn=str(reading.queue["jobQueueArn"]),
        state=str(reading.queue.get("state") or ""),
        now=reading.now,
        capacity=capacity_of(config, holding),
        shares=shares_of(config, table, holding, waiting_raw),
        waiting=[view(j) for j in waiting_raw],
        running=running,
        events=events,
        utilization=utilization(reading.jobs.values(), reading.now, reading.hours, reading.buckets),
    )
    return forecast_of(reading, running_jobs, waiting_raw).queue(queue_view)


def forecast_of(
    reading: AwsReading, running: list[RunningJob], waiting: list[Mapping[str, Any]]
) -> Predictions:
    """The queue's forecast, once per read: durations from the jobs read (see
    :mod:`~airflow_quota_provider.aws_batch.durations`), the state as AWS reports it."""
    state = QueueState.from_jobs(reading.config, running, [waiting_job(j) for j in waiting])
    durations = job_durations(reading.jobs.values(), reading.now)
    return predict(state, reading.now / 1000, durations)


def _with_preemptor(
    event: PreemptionEvent, jobs: Mapping[str, Mapping[str, Any]]
) -> PreemptionEvent:
    found = jobs.get(event.preemptor or "")
    if found is None:
        return event
    return replace(
        event, preemptor_name=found.get("jobName"), preemptor_share=found.get("quotaShareName")
    )


def job_view(
    job: Mapping[str, Any],
    now: int,
    place: Mapping[str, int],
    borrowing: bool,
    victims: Mapping[str, NextVictim],
    console_url: ConsoleUrl,
) -> JobView:
    code, message = split_reason(job.get("statusReason"))
    holding = job.get("status") in HOLDING_STATUSES
    started = started_at(job) if holding or job.get("startedAt") else None
    since = started if holding and started else int(job.get("createdAt") or now)
    priority = job.get("schedulingPriority")
    summary = job.get("preemptionSummary") or {}
    return JobView(
        job_id=job["jobId"],
        name=job.get("jobName") or "",
        arn=job.get("jobArn") or "",
        share=job.get("quotaShareName") or "",
        status=job.get("status") or "",
        reason_code=code,
        reason=message,
        priority=None if priority is None else int(priority),
        demand=demand_of(job),
        created_at=int(job.get("createdAt") or 0),
        started_at=started or None,
        age_seconds=max(0.0, (now - since) / 1000),
        position=place.get(job["jobId"]),
        borrowing=borrowing,
        preemptions=int(summary.get("preemptedAttemptCount") or 0),
        next_victim=victims.get(job["jobId"]),
        task=task_link(job.get("tags")),
        console_url=console_url(job["jobId"]),
    )


def capacity_of(config: QueueConfig, holding: list[Mapping[str, Any]]) -> list[UnitCapacity]:
    used = unit_totals(usage_from_jobs(holding))
    return [
        UnitCapacity(unit, config.capacity.get(unit, 0), used.get(unit, 0), config.unowned(unit))
        for unit in sorted(set(config.capacity) | set(used))
    ]


def shares_of(
    config: QueueConfig,
    table: Mapping[str, Mapping[str, Occupancy]],
    holding: list[Mapping[str, Any]],
    waiting: list[Mapping[str, Any]],
) -> list[ShareView]:
    result = []
    for share in config.shares:
        mine = [j for j in waiting if j.get("quotaShareName") == share.name]
        running = sum(1 for j in holding if j.get("quotaShareName") == share.name)
        result.append(share_view(config, share, table, running, [demand_of(j) for j in mine]))
    return result
