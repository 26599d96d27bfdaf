"""A simulation's result as JSON (for scripts) and as a readable timeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_quota_provider.core.showback import nearest_rank
from airflow_quota_provider.simulation.figures import LEGEND, duration, per_unit
from airflow_quota_provider.simulation.simulator import Attempt, Result, SimJob
from airflow_quota_provider.simulation.waits import first_start_waits, total_waits


def number(value: float) -> int | float:
    """Seconds as written: whole numbers without a fraction, others to the millisecond."""
    return int(value) if float(value).is_integer() else round(value, 3)


def _attempt(attempt: Attempt) -> dict[str, Any]:
    data: dict[str, Any] = {
        "start": number(attempt.start),
        "end": None if attempt.end is None else number(attempt.end),
        "outcome": attempt.outcome or "RUNNING",
        "borrowed": dict(sorted(attempt.borrowed.items())),
    }
    if attempt.preemption is not None:
        data["preemption"] = attempt.preemption.value
        data["preempted_by"] = attempt.preempted_by
        data["work_lost_unit_seconds"] = number(attempt.work_lost)
    return data


def _job(job: SimJob) -> dict[str, Any]:
    data: dict[str, Any] = {"status": job.status}
    if job.status in ("SUCCEEDED", "FAILED") and job.finished is not None:
        data["finished"] = number(job.finished)
    if job.reason is not None:
        data["reason"] = job.reason
        data["message"] = job.message
    data["preemptions"] = job.preemptions
    data["attempts"] = [_attempt(a) for a in job.attempts]
    return data


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (0 for none), as the showback report takes it."""
    found = nearest_rank(values, fraction)
    return 0.0 if found is None else found


def wait_summary(waits: Sequence[float]) -> dict[str, int | float]:
    """Mean, percentiles and maximum of sorted ``waits`` (seconds; 0 for none)."""
    return {
        "mean": number(sum(waits) / len(waits)) if waits else 0,
        "p50": number(percentile(waits, 0.50)),
        "p95": number(percentile(waits, 0.95)),
        "p99": number(percentile(waits, 0.99)),
        "max": number(waits[-1]) if waits else 0,
    }


def metrics(result: Result) -> dict[str, Any]:
    """The scenario's figures; the two waits are those of
    :mod:`~airflow_quota_provider.simulation.waits`."""
    jobs = result.jobs.values()
    counts = {status: 0 for status in ("succeeded", "failed", "rejected", "runnable", "running")}
    for job in jobs:
        key = job.status.lower()
        if key in counts:
            counts[key] += 1
    lost = sum(a.work_lost for j in jobs for a in j.attempts)
    return {
        "utilization": {
            unit: round(used / result.capacity_unit_seconds[unit], 4)
            if result.capacity_unit_seconds.get(unit)
            else 0.0
            for unit, used in sorted(result.used_unit_seconds.items())
        },
        "preemptions": result.preemptions,
        "lost_work_unit_seconds": number(lost),
        "total_wait_seconds": wait_summary(total_waits(jobs, result.end)),
        "first_start_wait_seconds": wait_summary(first_start_waits(jobs)),
        "jobs": counts,
        "end": number(result.end),
        "cycles": result.cycles,
    }


def to_json(result: Result) -> dict[str, Any]:
    """The ``simulate --json`` shape: every job, then the metrics."""
    return {
        "jobs": {job_id: _job(job) for job_id, job in result.jobs.items()},
        "metrics": metrics(result),
    }


def timeline_text(result: Result) -> str:
    """The timeline as an aligned table, then one line per job."""
    rows = [("t", "event", "job", "share", "detail")]
    rows += [(f"{number(e.at)}", e.event, e.job, e.share, e.detail) for e in result.timeline]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(
            [
                row[0].rjust(widths[0]),
                *(c.ljust(w) for c, w in zip(row[1:4], widths[1:], strict=True)),
                row[4],
            ]
        )
        for row in rows
    ]
    lines.append("")
    summary = [("job", "share", "status", "finished", "preemptions", "attempts")]
    for job_id, job in result.jobs.items():
        finished = "-" if job.finished is None else f"{number(job.finished)}"
        summary.append(
            (
                job_id,
                job.spec.share,
                job.status,
                finished,
                str(job.preemptions),
                str(len(job.attempts)),
            )
        )
    widths = [max(len(row[i]) for row in summary) for i in range(6)]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in summary
    ]
    data = metrics(result)
    total, first = data["total_wait_seconds"], data["first_start_wait_seconds"]
    lines.append("")
    lines.append(
        f"utilization: {per_unit(data['utilization'], '{:.0%}')}; preemptions: "
        f"{data['preemptions']}; mean wait {duration(total['mean'])} (max "
        f"{duration(total['max'])}), mean first wait {duration(first['mean'])}; ended at "
        f"t={data['end']} ({duration(result.end)})"
    )
    lines.append(LEGEND[0])
    return "\n".join(line.rstrip() for line in lines)
