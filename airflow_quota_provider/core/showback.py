"""Showback: what each share used, lent and waited for over a window of its history.

:func:`usage_report` gives, per share and unit over ``[since, until)``, the
instance-hours of each figure of :mod:`~airflow_quota_provider.core.history`
(owned, used within what it owns, borrowed, lent, left idle, and waiting demand),
the jobs started with their waits, the preemptions suffered and caused and the
work they lost. :func:`daily` gives the fleet's waits and work lost per day,
:func:`utilization` its use over time.

**Which jobs count in a window.** A job counts where its first start (attempt 1)
is; its *total wait* sums the waits of its starts before ``until`` (a job
requeued after a preemption waits again), its *first wait* is the first one. A
job whose first start is not in the history (recorded from a later attempt on,
or dropped by retention) counts in no window. A job counts for every unit it
asks for. Percentiles are nearest-rank: the smallest wait with at least that
fraction of the waits at or below it.

**Preemptions** count where the preempted attempt stopped, for the units the
victim held: suffered by the victim's share, caused by the preemptor's share
(when known). Work lost is the victim's instance-hours since its last
checkpoint.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, fields, replace

from airflow_quota_provider.core.history import (
    NAMES,
    History,
    JobStart,
    PreemptionRecord,
    integrate,
    series,
)
from airflow_quota_provider.core.views import UtilizationPoint

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass(frozen=True, slots=True)
class JobWait:
    """One job's waits, in seconds, from its starts in a history."""

    job_id: str
    share: str
    demand: dict[str, int]
    first_start: int
    starts: int
    first_wait: float
    total_wait: float


@dataclass(frozen=True, slots=True)
class ShareUsage:
    """One share's use of one unit over a window; hours are instance-hours, waits seconds
    (``None`` without jobs started)."""

    share: str
    unit: str
    owned_hours: float
    own_use_hours: float
    borrowed_hours: float
    lent_hours: float
    idle_hours: float
    waiting_hours: float
    jobs_started: int
    mean_wait: float | None
    p95_wait: float | None
    preemptions_suffered: int
    preemptions_caused: int
    hours_lost: float


@dataclass(frozen=True, slots=True)
class Day:
    """The fleet's waits (seconds, of the jobs first started that day) and the
    instance-hours preemption lost that day, per unit."""

    start: int
    jobs_started: int
    wait_p50: float | None
    wait_p95: float | None
    hours_lost: dict[str, float]


def job_waits(starts: Iterable[JobStart], until: int | None = None) -> dict[str, JobWait]:
    """Every job whose first start is among ``starts`` (before ``until``), with its waits."""
    result: dict[str, JobWait] = {}
    later: dict[str, list[JobStart]] = {}
    for start in starts:
        if until is not None and start.at >= until:
            continue
        if start.attempt == 1:
            wait = start.wait / 1000
            result[start.job_id] = JobWait(
                start.job_id, start.share, dict(start.demand), start.at, 1, wait, wait
            )
        else:
            later.setdefault(start.job_id, []).append(start)
    for job_id, first in result.items():
        again = [s.wait / 1000 for s in later.get(job_id, ()) if s.at >= first.first_start]
        result[job_id] = replace(
            first, starts=1 + len(again), total_wait=first.first_wait + sum(again)
        )
    return result


def nearest_rank(values: Sequence[float], fraction: float) -> float | None:
    """The smallest of ``values`` with at least ``fraction`` of them at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered) - 1e-9)))
    return ordered[rank - 1]


def usage_report(history: History, since: int, until: int) -> list[ShareUsage]:
    """Per share and unit (every key of the history with a figure in the window, or an
    event), sorted by share and unit."""
    totals = {k: sums for k, sums in integrate(history, since, until).items() if k[0] and any(sums)}
    waits: dict[tuple[str, str], list[float]] = {}
    for wait in job_waits(history.starts, until).values():
        if wait.first_start >= since:
            for unit in wait.demand:
                waits.setdefault((wait.share, unit), []).append(wait.total_wait)
    suffered: dict[tuple[str, str], list[PreemptionRecord]] = {}
    caused: dict[tuple[str | None, str], int] = {}
    for record in history.preemptions:
        if since <= record.at < until:
            for unit in record.demand:
                suffered.setdefault((record.share, unit), []).append(record)
                key = (record.preemptor_share, unit)
                caused[key] = caused.get(key, 0) + 1
    keys = {*totals, *waits, *suffered, *caused}
    return [
        _row(
            share,
            unit,
            totals.get((share, unit)),
            waits.get((share, unit), []),
            suffered.get((share, unit), []),
            caused.get((share, unit), 0),
        )
        for share, unit in sorted((s, u) for s, u in keys if s)
    ]


def _row(
    share: str,
    unit: str,
    totals: list[float] | None,
    waits: list[float],
    suffered: list[PreemptionRecord],
    caused: int,
) -> ShareUsage:
    hours = dict(zip(NAMES, (v / HOUR_MS for v in totals or [0] * len(NAMES)), strict=True))
    return ShareUsage(
        share=share,
        unit=unit,
        owned_hours=hours["owned"],
        own_use_hours=hours["own_use"],
        borrowed_hours=hours["borrowed"],
        lent_hours=hours["lent"],
        idle_hours=hours["idle"],
        waiting_hours=hours["waiting"],
        jobs_started=len(waits),
        mean_wait=sum(waits) / len(waits) if waits else None,
        p95_wait=nearest_rank(waits, 0.95),
        preemptions_suffered=len(suffered),
        preemptions_caused=caused,
        hours_lost=sum(p.lost(unit) for p in suffered) / 3600,
    )


def as_csv(rows: Iterable[ShareUsage]) -> str:
    """The rows as CSV: a header of :class:`ShareUsage`'s field names, then one line per row
    (an empty cell for ``None``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = [f.name for f in fields(ShareUsage)]
    writer.writerow(names)
    for row in rows:
        writer.writerow(["" if (v := getattr(row, name)) is None else str(v) for name in names])
    return out.getvalue()


def daily(
    history: History, since: int, until: int, shares: Collection[str] | None = None
) -> list[Day]:
    """Each UTC day from ``since``'s to ``until``'s: waits (total waits as known at
    ``until``) and work lost, of ``shares`` (all by default)."""
    first = since - since % DAY_MS
    count = max(0, -(-(until - first) // DAY_MS))
    waits: list[list[float]] = [[] for _ in range(count)]
    lost: list[dict[str, float]] = [{} for _ in range(count)]
    for wait in job_waits(history.starts, until).values():
        if first <= wait.first_start < until and (shares is None or wait.share in shares):
            waits[(wait.first_start - first) // DAY_MS].append(wait.total_wait)
    for record in history.preemptions:
        if first <= record.at < until and (shares is None or record.share in shares):
            hours = lost[(record.at - first) // DAY_MS]
            for unit in record.demand:
                hours[unit] = hours.get(unit, 0.0) + record.lost(unit) / 3600
    return [
        Day(first + i * DAY_MS, len(w), nearest_rank(w, 0.5), nearest_rank(w, 0.95), lost[i])
        for i, w in enumerate(waits)
    ]


def utilization(history: History, since: int, until: int, step: int) -> list[UtilizationPoint]:
    """The fleet's average instances in use per unit over each ``step`` of the window."""
    used = NAMES.index("own_use"), NAMES.index("borrowed")
    points = []
    for index, cell in enumerate(series(history, since, until, step)):
        start = since + index * step
        length = min(step, until - start)
        average = {
            unit: (sums[used[0]] + sums[used[1]]) / length
            for (share, unit), sums in sorted(cell.items(), key=lambda item: item[0][1])
            if share is None
        }
        points.append(UtilizationPoint(start, length // 1000, average))
    return points
