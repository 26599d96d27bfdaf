"""A fleet's usage history as the GPU Quotas page charts it: series per share and unit over
a time range, the fleet's utilization, waits and work lost per day, preemption marks.

Pure: a backend reads (or rebuilds) a :class:`~airflow_quota_provider.core.history.History`
over a :class:`Window` and this module shapes it; the figures are those of
:mod:`~airflow_quota_provider.core.history` and the per-day ones those of
:func:`~airflow_quota_provider.core.showback.daily`, so the page, the API and
``airflow-quota usage`` say the same.

**Ranges and steps.** The page offers four ranges, each with a step chosen so a chart
has about a hundred points whatever the range (:data:`RANGES`): 6 h by 5 minutes, 24 h
by 15 minutes, 7 days by the hour, 30 days by 6 hours. A window starts on its step's
grid (epoch-aligned, at or before ``now - range``) and ends at ``now``, so its last step
may be shorter. Each point is the key's *average* over its step (the integral divided
by the step's length), in instances: a step of 300 s in which a share used 4 instances
for 3 s holds ``own_use`` 0.04.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from airflow_quota_provider.core.history import NAMES, History, PreemptionRecord, series
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.showback import DAY_MS, HOUR_MS, Day, ShareUsage, daily
from airflow_quota_provider.core.showback import usage_report as showback

MINUTE_MS = 60_000
RANGES: dict[str, tuple[int, int]] = {
    "6h": (6 * HOUR_MS, 5 * MINUTE_MS),
    "24h": (DAY_MS, 15 * MINUTE_MS),
    "7d": (7 * DAY_MS, HOUR_MS),
    "30d": (30 * DAY_MS, 6 * HOUR_MS),
}
"""Range name: (its length, the step of its series), in milliseconds."""


@dataclass(frozen=True)
class Window:
    """``[since, until)`` in epoch milliseconds, charted by ``step``."""

    range: str
    since: int
    until: int
    step: int


def window(name: str, now: int) -> Window:
    """The window of range ``name`` (one of :data:`RANGES`) ending ``now``."""
    length, step = RANGES[name]
    start = now - length
    return Window(name, start - start % step, now, step)


def between(since: int, until: int) -> Window:
    """A window of no range (``airflow-quota usage --since --until``), one step long."""
    return Window("", since, until, max(1, until - since))


@dataclass(frozen=True)
class ShareSeries:
    """One share's figures for one unit, each the average over each step of the window
    (:data:`~airflow_quota_provider.core.history.NAMES`): instances, and for
    ``waiting_jobs`` jobs."""

    share: str
    unit: str
    owned: list[float]
    own_use: list[float]
    borrowed: list[float]
    lent: list[float]
    idle: list[float]
    waiting: list[float]
    waiting_jobs: list[float]


@dataclass(frozen=True)
class FleetSeries:
    """The fleet's capacity of one unit and what ran in it (borrowed beyond it included),
    averaged over each step; ``utilization`` is ``used / capacity`` (0 without capacity)."""

    unit: str
    capacity: list[float]
    used: list[float]
    waiting: list[float]
    utilization: list[float]


@dataclass(frozen=True)
class PreemptionMark:
    """A preempted attempt, where it stopped: who (``share``/``job_id``) was preempted by
    whom (``preemptor_share``/``preemptor``, ``None`` when not known) and why (the
    backend's recorded reason, ``""`` when none was kept); ``hours_lost`` are
    instance-hours of work lost per unit."""

    at: int
    kind: str
    share: str
    job_id: str
    job_name: str
    preemptor_share: str | None
    preemptor: str | None
    preemptor_name: str | None
    demand: dict[str, int]
    hours_lost: dict[str, float]
    reason: str


@dataclass(frozen=True)
class HistoryChart:
    """What the page's history charts draw; ``times`` are the steps' starts (epoch ms),
    ``step`` seconds."""

    queue: str
    kind: str
    range: str
    since: int
    until: int
    step: int
    times: list[int]
    shares: list[ShareSeries]
    fleet: list[FleetSeries]
    days: list[Day]
    preemptions: list[PreemptionMark]
    notes: list[str]


@dataclass(frozen=True)
class UsageAnswer:
    """The showback rows of :func:`~airflow_quota_provider.core.showback.usage_report` over
    a range."""

    queue: str
    range: str
    since: int
    until: int
    rows: list[ShareUsage]
    notes: list[str]


@dataclass(frozen=True)
class HistoryReading:
    """A queue's history over a :class:`Window`, as a backend read it, with what names its
    jobs: ``names`` (job id: name) and ``reasons`` (``(job id, stopped at)``: the reason the
    attempt stopped). The chart of every share is figured once (:attr:`chart`); a share
    filter picks from it."""

    queue: str
    kind: str
    config: QueueConfig
    history: History
    window: Window
    names: Mapping[str, str] = field(default_factory=dict)
    reasons: Mapping[tuple[str, int], str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @cached_property
    def chart(self) -> HistoryChart:
        return chart_of(self)

    def for_shares(self, shares: Collection[str] | None) -> HistoryChart:
        """:attr:`chart` with only ``shares``' series, days and preemptions (suffered or
        caused); the fleet's series stay whole. ``None``: every share."""
        whole = self.chart
        if shares is None:
            return whole
        win = self.window
        return HistoryChart(
            **{
                **whole.__dict__,
                "shares": [s for s in whole.shares if s.share in shares],
                "days": daily(self.history, win.since, win.until, shares),
                "preemptions": [
                    p for p in whole.preemptions if p.share in shares or p.preemptor_share in shares
                ],
            }
        )

    def usage(self, shares: Collection[str] | None = None) -> UsageAnswer:
        rows = showback(self.history, self.window.since, self.window.until)
        if shares is not None:
            rows = [row for row in rows if row.share in shares]
        win = self.window
        return UsageAnswer(self.queue, win.range, win.since, win.until, rows, list(self.notes))


class HistorySource(Protocol):
    """Where the usage history of one job queue or fleet comes from: one implementation per
    backend (AWS Batch rebuilds it from what AWS keeps of its service jobs, a pools fleet's
    manager records it), read alike by the page, its routes and ``airflow-quota usage``."""

    clock: str
    """Whose clock :meth:`now` reads, as a message names it (``AWS's clock``)."""

    def now(self) -> int:
        """Epoch milliseconds by the clock the history is kept by."""
        ...

    def reading(self, window: Window) -> HistoryReading:
        """The history over ``window``, with what names its jobs and where it falls short."""
        ...


def chart_of(reading: HistoryReading) -> HistoryChart:
    """Every share's and the fleet's series, the days and the marks of ``reading``."""
    win, history = reading.window, reading.history
    cells = series(history, win.since, win.until, win.step)
    times = [win.since + index * win.step for index in range(len(cells))]
    lengths = [min(win.step, win.until - start) for start in times]
    averages: dict[tuple[str | None, str], list[list[float]]] = {}
    for index, cell in enumerate(cells):
        for key, sums in cell.items():
            rows = averages.setdefault(key, [[0.0] * len(cells) for _ in NAMES])
            for figure, value in enumerate(sums):
                rows[figure][index] = value / lengths[index]
    shares = [
        ShareSeries(share, unit, *rows)
        for (share, unit), rows in sorted(averages.items(), key=lambda i: (i[0][0] or "", i[0][1]))
        if share is not None and any(any(row) for row in rows)
    ]
    fleet = [
        _fleet(unit, rows)
        for (share, unit), rows in sorted(averages.items(), key=lambda i: i[0][1])
        if share is None
    ]
    marks = [
        _mark(p, reading.names, reading.reasons)
        for p in history.preemptions
        if win.since <= p.at < win.until
    ]
    return HistoryChart(
        queue=reading.queue,
        kind=reading.kind,
        range=win.range,
        since=win.since,
        until=win.until,
        step=win.step // 1000,
        times=times,
        shares=shares,
        fleet=fleet,
        days=daily(history, win.since, win.until),
        preemptions=marks,
        notes=list(reading.notes),
    )


def _fleet(unit: str, rows: list[list[float]]) -> FleetSeries:
    figure = {name: rows[index] for index, name in enumerate(NAMES)}
    used = [a + b for a, b in zip(figure["own_use"], figure["borrowed"], strict=True)]
    return FleetSeries(
        unit,
        figure["owned"],
        used,
        figure["waiting"],
        [u / c if c else 0.0 for u, c in zip(used, figure["owned"], strict=True)],
    )


def _mark(
    record: PreemptionRecord, names: Mapping[str, str], reasons: Mapping[tuple[str, int], str]
) -> PreemptionMark:
    return PreemptionMark(
        at=record.at,
        kind=record.kind,
        share=record.share,
        job_id=record.job_id,
        job_name=names.get(record.job_id, ""),
        preemptor_share=record.preemptor_share,
        preemptor=record.preemptor,
        preemptor_name=names.get(record.preemptor) if record.preemptor else None,
        demand=dict(record.demand),
        hours_lost={unit: record.lost(unit) / 3600 for unit in record.demand},
        reason=reasons.get((record.job_id, record.at), ""),
    )
