"""One job explained in words: why it waits (AWS's reason, with the numbers), what it
holds, whether a reclaim would take it next, and each time it was preempted."""

from __future__ import annotations

from airflow_quota_provider.aws_batch.job_views import PREEMPTING
from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES
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
    return lines


def instances(demand: dict[str, int]) -> str:
    return ", ".join(f"{count} {unit}" for unit, count in sorted(demand.items())) or "nothing"


def _text(value: object) -> str:
    return "unknown" if value is None else str(value)
