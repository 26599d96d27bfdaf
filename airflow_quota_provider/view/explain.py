"""One job explained in words: why it waits (AWS's reason, with the numbers), what it
holds, whether a reclaim would take it next, and each time it was preempted."""

from __future__ import annotations

from airflow_quota_provider.aws_batch.job_views import PREEMPTING
from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES
from airflow_quota_provider.core.predictions import at_text, end_text
from airflow_quota_provider.core.times import when
from airflow_quota_provider.core.views import Explanation, JobView, PreemptionEvent, QueueView


def explain(job: JobView, view: QueueView, preemptions: list[PreemptionEvent]) -> Explanation:
    return Explanation(job, _summary(job, view), _details(job, view), preemptions)


def _summary(job: JobView, view: QueueView) -> str:
    wants = instances(job.demand)
    why = ": ".join(part for part in (job.reason_code, job.reason) if part)
    if job.status == "RUNNABLE":
        return (
            f"{job.job_id} waits for {wants} in share {job.share}: {why or 'no reason given yet'}"
        )
    if job.status in HOLDING_STATUSES:
        if job.reason_code == PREEMPTING:
            return f"{job.job_id} is being preempted: {job.reason}"
        borrowing = ", borrowing" if job.borrowing else ""
        return f"{job.job_id} is {job.status} with {wants} in share {job.share}{borrowing}"
    return f"{job.job_id} {job.status}" + (f": {why}" if why else "")


def _details(job: JobView, view: QueueView) -> list[str]:
    lines = [f"ALERT: {alert}" for alert in view.alerts]
    lines.append(f"{view.kind} {view.name}, share {job.share}, priority {_text(job.priority)}")
    if job.status == "RUNNABLE":
        place = (
            f"position {job.position} of the queue's dispatch order"
            if job.position is not None
            else "beyond the first 100 of the queue's dispatch order"
        )
        lines.append(f"{place}, waiting {job.age_seconds:.0f} s")
    share = next((s for s in view.shares if s.name == job.share), None)
    if share is not None:
        for unit in share.units:
            lines.append(
                f"share {share.name} {unit.unit}: owns {unit.owned}, uses {unit.used} "
                f"({unit.own_use} own, {unit.borrowed} borrowed), lends {unit.lent}, "
                f"idle {unit.idle}, may hold at most {unit.limit}"
            )
    if job.next_victim is not None:
        victim = job.next_victim
        lines.append(
            f"next victim if share {victim.by_share} asks for all it owns "
            f"({victim.kind}): {victim.message}"
        )
    if job.preemptions:
        lines.append(f"preempted {job.preemptions} time(s) so far")
    return lines + _forecast(job, view)


def _forecast(job: JobView, view: QueueView) -> list[str]:
    """What the view's forecast says of the job: when it starts and what it waits for, or
    when it ends; and what its duration estimate rests on."""
    lines = []
    start = job.predicted_start
    if start is not None:
        moment = f" ({when(start.likely)})" if start.likely is not None else ""
        lines.append(f"forecast: starts {start.text}{moment}; {start.basis}")
        for awaited in start.waits_for:
            lines.append(f"  waits for {_end_of(awaited.job_id, awaited.at, view)}")
        for victim in start.victims:
            found = view.job(victim)
            name = f"{found.name} ({victim})" if found is not None else victim
            lines.append(f"  a preemption makes room: {name} is preempted for it")
        if start.no_start:
            lines.append(f"  {start.no_start_code}: {start.no_start}")
    if job.expected_end is not None:
        lines.append(f"forecast: {end_text(job.expected_end, view.now)}")
    if job.duration is not None:
        guess = ", a guess" if job.duration.guess else ""
        lines.append(f"its duration: {job.duration.basis}{guess}")
    if lines and view.forecast_basis:
        lines.append(f"how the forecast is made: {view.forecast_basis}")
    return lines


def _end_of(job_id: str, at: int, view: QueueView) -> str:
    """A job whose end makes room, and when it ends in the forecast."""
    found = view.job(job_id)
    if found is None:
        return f"{job_id} to end, {at_text(at, view.now)}"
    what = "running" if found.status != "RUNNABLE" else "waiting now, started in the forecast"
    text = f"{found.name} ({job_id}, {what}, share {found.share}) to end, {at_text(at, view.now)}"
    if found.duration is not None:
        text += f"; its duration: {found.duration.basis}"
    return text


def instances(demand: dict[str, int]) -> str:
    return ", ".join(f"{count} {unit}" for unit, count in sorted(demand.items())) or "nothing"


def _text(value: object) -> str:
    return "unknown" if value is None else str(value)
