"""A job queue's service-job history as a trace in this project's csv format.

Each described service job (``DescribeServiceJob``) becomes one row:
``submit_seconds`` counts from the earliest ``createdAt`` exported, the share
is ``quotaShareName``, priority ``schedulingPriority``, unit and count its
``capacityUsage``, ``preemption_retries`` its
``preemptionRetriesBeforeTermination``, and ``duration_seconds`` the run time
of its last attempt: the work it needed once nothing interrupted it. A job
that never ran, or still runs, has no known duration yet: it is left out, and
:class:`Export` says how many and why.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from airflow_quota_provider.simulation.traces import CSV_COLUMNS, CSV_OPTIONAL

Row = dict[str, str]


@dataclass
class Export:
    rows: list[Row] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def summary(self, job_queue: str) -> str:
        line = f"exported {len(self.rows):,} jobs of {job_queue}"
        if not self.skipped:
            return line
        reasons = ", ".join(f"{n:,} {why}" for why, n in self.skipped.most_common())
        return f"{line}; left out {sum(self.skipped.values()):,}: {reasons}"

    def write(self, stream: TextIO) -> None:
        writer = csv.DictWriter(stream, fieldnames=(*CSV_COLUMNS, *CSV_OPTIONAL))
        writer.writeheader()
        writer.writerows(self.rows)


def export_jobs(jobs: Iterable[Mapping[str, Any]]) -> Export:
    """Rows of the described ``jobs`` in submission order (ties keep their order)."""
    ordered = sorted(jobs, key=lambda job: int(job["createdAt"]))
    export = Export()
    first = int(ordered[0]["createdAt"]) if ordered else 0
    for job in ordered:
        reason = _unusable(job)
        if reason is not None:
            export.skipped[reason] += 1
            continue
        attempt = job["attempts"][-1]
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
                "duration_seconds": _seconds(int(attempt["stoppedAt"]) - int(attempt["startedAt"])),
                "checkpoint_interval_seconds": "",
                "preemption_retries": "" if retries is None else str(retries),
            }
        )
    return export


def _unusable(job: Mapping[str, Any]) -> str | None:
    if not job.get("attempts"):
        return "that never started (no run time to replay)"
    if not job.get("quotaShareName"):
        return "without a quota share"
    if len(job.get("capacityUsage") or []) != 1:
        return "not using exactly one instance type"
    attempt = job["attempts"][-1]
    if attempt.get("stoppedAt") is None:
        return "still running (run time not known yet)"
    if attempt["stoppedAt"] <= attempt["startedAt"]:
        return "whose last attempt ran for no time"
    return None


def _seconds(millis: int) -> str:
    whole, rest = divmod(millis, 1000)
    return str(whole) if not rest else f"{whole}.{rest:03d}".rstrip("0")
