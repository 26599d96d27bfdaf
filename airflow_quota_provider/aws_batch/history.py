"""The usage history of an AWS Batch job queue, rebuilt from what AWS keeps of its jobs.

A pure translation of ``DescribeServiceJob`` answers into the core's history
(:mod:`~airflow_quota_provider.core.history`): no AWS call here (the reading is
:meth:`~airflow_quota_provider.hooks.batch.BatchQuotaHook.service_jobs_since`).

**What AWS keeps.** Of each service job: ``createdAt`` (submitted), its
``attempts`` (one SageMaker training job each: ``startedAt`` when it was
scheduled and took its capacity, ``stoppedAt`` when it gave it back, and the
``statusReason`` it stopped with), ``preemptionSummary`` (how often it was
preempted and its most recent preempted attempts), its ``quotaShareName`` and
``capacityUsage`` (instances per type), and its status. Of the queue: only its
*current* quota shares and service environments. ``ListServiceJobs`` lists a
queue's ended jobs only for a limited time after they end, and AWS publishes no
period for service jobs (neither the API reference of ``ListServiceJobs`` and
``DescribeServiceJob`` nor the SDK's model, botocore 1.44, names one): plan on
days, not weeks, and nothing here relies on a number. Jobs AWS no longer lists
leave no trace; a report over a window older than that is silently short.

**The rebuild.** Each attempt holds its job's instances over
``[startedAt, stoppedAt)`` (until ``until`` if it still runs); a job waits from
``createdAt`` to its first attempt, and again from each attempt's stop to the
next attempt's start (or, while it is waiting now, until ``until``). These
intervals are replayed in time order through a
:class:`~airflow_quota_provider.core.history.Recorder`: at ``since`` and at each
instant something starts or stops, the fleet's figures
(:func:`~airflow_quota_provider.core.history.figures_of`: owned, used within
own, borrowed, lent, idle, waiting, per share and unit) are observed and only
changes are kept. Each attempt's start is a
:class:`~airflow_quota_provider.core.history.JobStart` whose wait began at the
job's submission (attempt 1) or at the previous attempt's stop. Each preempted
attempt is a :class:`~airflow_quota_provider.core.history.PreemptionRecord`,
read as :func:`~airflow_quota_provider.aws_batch.events.preemption_events`
reads it for the view (kind from the reason's headline, the preemptor when the
reason names it, work lost since the last checkpoint); when the headline is
none this provider knows (AWS's own wording for in-share preemption is not
published), the kind is read from the history: ``RECLAIM`` if the victim's
share borrowed just before the stop, else ``IN_SHARE``.

**What cannot be rebuilt.** Capacity over time: AWS keeps only the current quota
shares and environments, and no time of their making. The config at each moment is
therefore a :class:`~airflow_quota_provider.core.config_timeline.Timeline` built from the
records ``airflow-quota apply`` tags its changes with
(:mod:`~airflow_quota_provider.aws_batch.change_tags`); where there is none, today's
config stands for the past and the reading says so (a share deleted since counts its
jobs as borrowing). Jobs AWS has forgotten, and so any window
older than its retention. Reasons a job waited (only the current one is kept).
A preempted attempt older than the ``recentPreemptedAttempts`` AWS keeps is
still found in ``attempts`` when its reason carries a known headline.

**Longer retention** therefore needs a recording process, and the one to do it is
``airflow-quota reconcile --config FILE --loop``
(:mod:`~airflow_quota_provider.reconciler`): it is the provider's long-running
process beside an AWS Batch deployment, already reads the queue's service jobs
every pass, and would feed a :class:`~airflow_quota_provider.core.history.Recorder`
with the queue's state and the quota shares in force at each pass (so capacity
changes are recorded too), storing changes in a database as the pool manager is
to store a pools fleet's. The GPU Quotas view's backend is no fit: it reads only
while someone looks. That recorder is not built yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from airflow_quota_provider.aws_batch.events import kind_of, preemption_events
from airflow_quota_provider.aws_batch.statuses import WAITING_STATUSES
from airflow_quota_provider.aws_batch.training_config import instances_of
from airflow_quota_provider.aws_batch.translate import demand_of
from airflow_quota_provider.core.config_timeline import Timeline
from airflow_quota_provider.core.history import (
    Change,
    Figures,
    History,
    JobStart,
    Key,
    PreemptionRecord,
    Recorder,
    figures_of,
)
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.reasons import PreemptionKind
from airflow_quota_provider.core.usage import held

Job = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Span:
    """``job_id`` of ``share`` held (``holds``) or waited for ``demand`` over ``[start, stop)``."""

    start: int
    stop: int
    holds: bool
    share: str
    job_id: str
    demand: Mapping[str, int]


def job_demand(job: Job) -> dict[str, int]:
    """Instances per type the job holds when it runs: its ``capacityUsage``, else its
    request's ``ResourceConfig`` (a job AWS reports no usage for yet)."""
    demand = demand_of(job)
    if demand:
        return demand
    try:
        request = json.loads(job.get("serviceRequestPayload") or "{}")
    except ValueError:
        return {}
    found = instances_of(request) if isinstance(request, dict) else {}
    return found if isinstance(found, dict) else {}


def attempts_of(job: Job, until: int) -> list[tuple[int, int]]:
    """``(startedAt, stoppedAt)`` of each attempt, oldest first; one still running stops at
    ``until``. A job listed without its attempts has one from ``scheduledAt`` (or
    ``startedAt``) to ``stoppedAt``."""
    attempts = job.get("attempts")
    if attempts is None:
        begin = job.get("scheduledAt") or job.get("startedAt")
        attempts = [{"startedAt": begin, "stoppedAt": job.get("stoppedAt")}] if begin else []
    spans = []
    for attempt in attempts:
        begin = attempt.get("startedAt")
        if begin:
            stop = attempt.get("stoppedAt") or job.get("stoppedAt") or until
            spans.append((int(begin), min(int(stop), until)))
    return spans


def spans_of(job: Job, until: int) -> list[Span]:
    """When the job held its instances and when it waited."""
    share, job_id, demand = str(job.get("quotaShareName") or ""), str(job["jobId"]), job_demand(job)
    spans: list[Span] = []
    waiting_since: int | None = int(job.get("createdAt") or 0)
    for begin, end in attempts_of(job, until):
        if waiting_since is not None and begin > waiting_since:
            spans.append(Span(waiting_since, begin, False, share, job_id, demand))
        spans.append(Span(begin, end, True, share, job_id, demand))
        waiting_since = end
    if waiting_since is not None and job.get("status") in WAITING_STATUSES:
        spans.append(Span(waiting_since, until, False, share, job_id, demand))
    return [span for span in spans if span.stop > span.start]


def starts_of(job: Job, until: int) -> list[JobStart]:
    """Each attempt's start before ``until``, with the wait before it."""
    share, job_id, demand = str(job.get("quotaShareName") or ""), str(job["jobId"]), job_demand(job)
    starts = []
    queued = int(job.get("createdAt") or 0)
    for number, (begin, end) in enumerate(attempts_of(job, until), start=1):
        if begin < until:
            starts.append(JobStart(begin, share, job_id, demand, number, min(queued, begin)))
        queued = end
    return starts


def preemptions_of(job: Job, jobs: Mapping[str, Job]) -> list[PreemptionRecord]:
    """The job's preempted attempts: its ``recentPreemptedAttempts`` and any older attempt
    whose reason has a preemption headline. ``kind`` is ``""`` when the reason has none
    (see :func:`rebuild`); the preemptor's share is read from ``jobs`` (by id)."""
    recent = (job.get("preemptionSummary") or {}).get("recentPreemptedAttempts") or []
    seen = {int(a.get("stoppedAt") or 0) for a in recent}
    older = [
        a
        for a in job.get("attempts") or ()
        if a.get("stoppedAt")
        and int(a["stoppedAt"]) not in seen
        and kind_of(str(a.get("statusReason") or ""))
    ]
    described = {**job, "preemptionSummary": {"recentPreemptedAttempts": [*older, *recent]}}
    demand = job_demand(job)
    instances = sum(demand.values()) or 1
    records = []
    for event in preemption_events(described, lambda _: ""):
        by = jobs.get(event.preemptor or "")
        records.append(
            PreemptionRecord(
                at=event.stopped_at,
                kind=event.kind or "",
                share=event.share,
                job_id=event.job_id,
                demand=demand,
                preemptor_share=None if by is None else by.get("quotaShareName"),
                preemptor=event.preemptor,
                seconds_lost=event.work_lost / instances,
            )
        )
    return records


def rebuild(
    configs: Timeline | QueueConfig, jobs: Iterable[Job], since: int, until: int
) -> History:
    """The queue's history over ``[since, until)`` (epoch ms) from its described jobs,
    figured at each moment with the config then in force (``configs``: a
    :class:`~airflow_quota_provider.core.config_timeline.Timeline`, or one config that
    stands for the whole window)."""
    if isinstance(configs, QueueConfig):
        configs = Timeline.fixed(configs)
    jobs = list(jobs)
    by_id = {str(job["jobId"]): job for job in jobs}
    spans = [span for job in jobs for span in spans_of(job, until)]
    recorder = Recorder()
    _replay(recorder, configs, spans, since, until)
    for job in jobs:
        for start in starts_of(job, until):
            recorder.started(start)
        for record in preemptions_of(job, by_id):
            if since <= record.at < until:
                recorder.preempted(record)
    history = recorder.history(end=until)
    preemptions = tuple(_with_kind(p, history.changes) for p in history.preemptions)
    return History(history.end, history.changes, (), preemptions, history.starts)


def _replay(
    recorder: Recorder, configs: Timeline, spans: Sequence[Span], since: int, until: int
) -> None:
    """Observe the figures at ``since``, at each instant a span starts or stops and at each
    change of the config."""
    active: dict[int, Span] = {}
    moments: dict[int, list[tuple[bool, int]]] = {at: [] for at in configs.changes(since, until)}
    for index, span in enumerate(spans):
        if span.stop <= since or span.start >= until:
            continue
        if span.start <= since:
            active[index] = span
        else:
            moments.setdefault(span.start, []).append((True, index))
        if span.stop < until:
            moments.setdefault(span.stop, []).append((False, index))
    recorder.observe(since, _figures(configs.at(since), active.values()))
    for at in sorted(moments):
        for begins, index in moments[at]:
            if begins:
                active[index] = spans[index]
            else:
                active.pop(index, None)
        recorder.observe(at, _figures(configs.at(at), active.values()))


def _figures(config: QueueConfig, active: Iterable[Span]) -> dict[Key, Figures]:
    spans = list(active)
    usage = held((s.share, s.demand) for s in spans if s.holds)
    return figures_of(config, usage, ((s.share, s.demand) for s in spans if not s.holds))


def _with_kind(record: PreemptionRecord, changes: Sequence[Change]) -> PreemptionRecord:
    """``record`` with its kind read from the history when its reason gave none: ``RECLAIM``
    if the victim's share borrowed any of the victim's units just before the stop."""
    if record.kind:
        return record
    borrowed: dict[str, int] = {}
    for change in changes:
        if change.at >= record.at:
            break
        if change.share == record.share and change.unit in record.demand:
            borrowed[change.unit] = change.figures.borrowed
    kind = PreemptionKind.RECLAIM if any(borrowed.values()) else PreemptionKind.IN_SHARE
    return replace(record, kind=kind.value)
