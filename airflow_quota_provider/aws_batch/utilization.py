"""Utilization over the last hours, rebuilt from the jobs' attempts.

Each attempt holds its job's instances from its ``startedAt`` (SCHEDULED:
handed to SageMaker) until its ``stoppedAt`` (or now). The average number of
instances in use per type over each bucket is the held instance-seconds in
the bucket divided by its length. Nothing is stored: the figures come from
the jobs the backend reads (those created in the window and those still
active), so they survive restarts; a job created before the window that
ended inside it is not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_quota_provider.aws_batch.translate import demand_of
from airflow_quota_provider.core.views import UtilizationPoint


def utilization(
    jobs: Iterable[Mapping[str, Any]], now: int, hours: float, buckets: int
) -> list[UtilizationPoint]:
    """``buckets`` points covering ``hours`` before ``now`` (epoch ms), oldest first."""
    span = int(hours * 3600 * 1000)
    step = max(1, span // buckets)
    start = now - step * buckets
    totals: dict[str, list[float]] = {}
    for job in jobs:
        demand = demand_of(job)
        for begin, end in _intervals(job, now):
            for index in range(max(0, (begin - start) // step), buckets):
                low = start + index * step
                if low >= end:
                    break
                overlap = min(end, low + step) - max(begin, low)
                for unit, count in demand.items():
                    row = totals.setdefault(unit, [0.0] * buckets)
                    row[index] += overlap * count
    return [
        UtilizationPoint(
            start=start + index * step,
            seconds=step // 1000,
            used={unit: round(row[index] / step, 2) for unit, row in sorted(totals.items())},
        )
        for index in range(buckets)
    ]


def _intervals(job: Mapping[str, Any], now: int) -> list[tuple[int, int]]:
    result = []
    for attempt in job.get("attempts") or ():
        begin = attempt.get("startedAt")
        if not begin:
            continue
        end = attempt.get("stoppedAt") or now
        if end > begin:
            result.append((int(begin), int(end)))
    return result
