"""A job queue's service-job history as a trace in this project's csv format.

Each described service job (``DescribeServiceJob``) that succeeded becomes
one row: ``submit_seconds`` counts from the earliest ``createdAt`` exported,
the share is ``quotaShareName``, priority ``schedulingPriority``, unit and
count its ``capacityUsage``, ``preemption_retries`` its
``preemptionRetriesBeforeTermination``, ``checkpoint_interval_seconds`` how
often it checkpoints (:func:`~airflow_quota_provider.checkpoints.checkpoint_interval`;
empty when its payload has no ``CheckpointConfig.S3Uri``), and
``duration_seconds`` the work it did: how long it would have held its
instances had nothing interrupted it, which is what a replay runs a job for.

That work is, over all its attempts, the run time (start to stop: an attempt
holds its instances all along) less the work lost and redone: an attempt
before the last keeps what it reached by its last checkpoint and loses the
rest, as a replay counts it (every ``interval`` seconds of the job's work;
without checkpoints an interrupted attempt keeps nothing). So the work is the
last attempt's run time plus what earlier attempts kept. Batch does not say
when within an attempt the training began, so an attempt's start-up counts
towards its checkpoints: a preemption that comes within the start-up time
after a checkpoint interval ended is taken to have kept one interval more than
the training saved.

Left out, and counted by reason in :meth:`Export.summary` with the instance
time they held, are jobs whose work is not known: those that never started,
are still waiting or running, and those that did not succeed (terminated,
failed, preempted more often than allowed). A replay runs each row's work to
success; a job cut short needed more work than it did, how much no record
says, and writing what it did would make it a shorter job that succeeds.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from airflow_quota_provider.checkpoints import DEFAULT_CHECKPOINT_INTERVAL, described_interval
from airflow_quota_provider.simulation.figures import duration
from airflow_quota_provider.simulation.traces import CSV_COLUMNS, CSV_OPTIONAL

Row = dict[str, str]


@dataclass
class Export:
    rows: list[Row] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    held: dict[str, float] = field(default_factory=dict)
    """Instance-seconds per unit the jobs left out held in their attempts."""

    def summary(self, job_queue: str) -> str:
        line = f"exported {len(self.rows):,} jobs of {job_queue}"
        if not self.skipped:
            return line
        counted = sorted(self.skipped.items(), key=lambda item: (-item[1], item[0]))
        reasons = ", ".join(f"{n:,} {why}" for why, n in counted)
        line = f"{line}; left out {sum(self.skipped.values()):,}: {reasons}"
        if not any(self.held.values()):
            return line
        held = ", ".join(f"{duration(s)} of {u}" for u, s in sorted(self.held.items()) if s)
        return f"{line}; those held {held} instance time, not in the trace"

    def write(self, stream: TextIO) -> None:
        writer = csv.DictWriter(stream, fieldnames=(*CSV_COLUMNS, *CSV_OPTIONAL))
        writer.writeheader()
        writer.writerows(self.rows)


def export_jobs(
    jobs: Iterable[Mapping[str, Any]], default_interval: float = DEFAULT_CHECKPOINT_INTERVAL
) -> Export:
    """Rows of the described ``jobs`` in submission order (ties keep their order);
    ``default_interval`` is the checkpoint interval of a checkpointing job without the tag."""
    ordered = sorted(jobs, key=lambda job: int(job["createdAt"]))
    export = Export()
    first = int(ordered[0]["createdAt"]) if ordered else 0
    for job in ordered:
        reason = _unusable(job)
        if reason is not None:
            export.skipped[reason] += 1
            _hold(export.held, job)
            continue
        interval = described_interval(job, default_interval)
        usage = job["capacityUsage"][0]
        retries = (job.get("preemptionConfiguration") or {}).get(
            "preemptionRetriesBeforeTermination"
        )
        export.rows.append(
            {
                "id": str(job["jobId"]),
                "submit_seconds": _seconds(int(job["createdAt"]) - first),
                "share": str(job.get("quotaShareName") or ""),
                "priority": str(job.get("schedulingPriority") or 0),
                "unit": str(usage["capacityUnit"]),
                "count": str(round(usage["quantity"])),
                "duration_seconds": _seconds(work_done(job["attempts"], interval)),
                "checkpoint_interval_seconds": "" if interval is None else f"{interval:g}",
                "preemption_retries": "" if retries is None else str(retries),
            }
        )
    return export


def work_done(attempts: Iterable[Mapping[str, Any]], interval: float | None) -> int:
    """Milliseconds of work over ``attempts`` (the last one finished the job): the last
    run plus what the earlier ones kept at their checkpoints (see the module docstring)."""
    runs = [int(a["stoppedAt"]) - int(a["startedAt"]) for a in attempts]
    step = round(interval * 1000) if interval else 0
    kept = 0
    for run in runs[:-1]:
        kept = (kept + run) // step * step if step else 0
    return kept + runs[-1]


def _unusable(job: Mapping[str, Any]) -> str | None:
    if not job.get("attempts"):
        return "that never started (no run time to replay)"
    if not job.get("quotaShareName"):
        return "without a quota share"
    if len(job.get("capacityUsage") or []) != 1:
        return "not using exactly one instance type"
    status = job.get("status")
    if status == "FAILED":
        cut = "terminated" if job.get("isTerminated") else "that failed"
        return f"{cut} (the work it needed is not known)"
    if status != "SUCCEEDED":
        return "not finished yet (the work it needs is not known yet)"
    attempt = job["attempts"][-1]
    if attempt["stoppedAt"] <= attempt["startedAt"]:
        return "whose last attempt ran for no time"
    return None


def _hold(held: dict[str, float], job: Mapping[str, Any]) -> None:
    """Add the instance time ``job``'s finished attempts held to ``held``."""
    for usage in job.get("capacityUsage") or ():
        for attempt in job.get("attempts") or ():
            if attempt.get("stoppedAt") is not None:
                seconds = (int(attempt["stoppedAt"]) - int(attempt["startedAt"])) / 1000
                unit = str(usage["capacityUnit"])
                held[unit] = held.get(unit, 0.0) + seconds * float(usage["quantity"])


def _seconds(millis: int) -> str:
    whole, rest = divmod(millis, 1000)
    return str(whole) if not rest else f"{whole}.{rest:03d}".rstrip("0")
