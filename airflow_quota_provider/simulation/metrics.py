"""What a replay did to each share: use, waiting demand and broken guarantees over time.

A :class:`Meter` is told the queue's state each time the replay's clock moves
on (the state held from one instant to the next) and integrates, per share and
unit:

- ``used``: instances held (jobs being preempted included, they still hold them);
- ``borrowed``: the part of ``used`` beyond what the share owns;
- ``pending``: instances asked for by the share's waiting jobs;
- ``wanted`` (whole queue only): the capacity jobs could have used, the
  smaller of the queue's capacity and what runs plus what waits; used over
  wanted is 1 for a scheduler that never leaves capacity idle while jobs wait;
- ``guarantee_violation``: waiting demand the share's guarantee covers but
  which does not run: the share's waiting jobs, taken in dispatch order while
  they fit together in what the share owns once it has made room within it:
  capacity it lends is reclaimed, its own jobs being preempted have stopped
  and, with in-share preemption, its running jobs of lower priority than the
  waiting job are stopped (the core's
  :func:`~airflow_quota_provider.core.preemption.in_share_candidates` and
  :func:`~airflow_quota_provider.core.preemption.fits_own_after`, the rule a
  cycle orders and reclaims by). A job that would take its share beyond what it
  owns even then is not covered (it would borrow), so neither is anything
  behind it. Whatever keeps a covered job waiting (a preemption delay,
  ``min_runtime_seconds`` protecting borrowers, the engine's choices) counts.

Guarantees are those of the config the meter is given (the config as
written), whatever policy the replay schedules with, or those of
``guarantees`` when given: a proposed config measured against the guarantees
it has to keep (what each share owns today).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.preemption import fits_own_after, in_share_candidates
from airflow_quota_provider.core.state import QueueState
from airflow_quota_provider.core.usage import UsageView
from airflow_quota_provider.simulation.output import number, wait_summary
from airflow_quota_provider.simulation.simulator import Result, SimJob
from airflow_quota_provider.simulation.waits import first_start_waits, total_waits

Usage = dict[str, dict[str, int]]
"""Instances per share and unit at one moment."""


@dataclass
class Integrals:
    """Unit-seconds of one share, per unit."""

    used: dict[str, float] = field(default_factory=dict)
    borrowed: dict[str, float] = field(default_factory=dict)
    pending: dict[str, float] = field(default_factory=dict)
    violation: dict[str, float] = field(default_factory=dict)


class Meter:
    """Time integrals per share of a replay; optionally the usage after every instant."""

    def __init__(
        self,
        config: QueueConfig,
        *,
        series: bool = False,
        guarantees: QueueConfig | None = None,
    ) -> None:
        self.owned = {share.name: dict(share.capacity) for share in config.shares}
        self.promised = guarantees or config
        self.guaranteed = {s.name: s for s in self.promised.shares if any(s.capacity.values())}
        self.capacity = dict(config.capacity)
        self.wanted: dict[str, float] = {}
        self.integrals: dict[str, Integrals] = {}
        self.series: list[tuple[float, Usage]] | None = [] if series else None
        self._view: UsageView | None = None
        """What shares hold once the preemptions in progress are done, built at most once
        per instant and only when a share with a guarantee has jobs waiting."""

    def elapse(
        self, start: float, end: float, state: QueueState, pending: Mapping[str, Mapping[str, int]]
    ) -> None:
        """``state`` (and the waiting demand ``pending``) held from ``start`` until ``end``."""
        elapsed = end - start
        demand: dict[str, int] = {}
        self._use(elapsed, state, demand)
        self._wait(elapsed, state, pending, demand)
        self._view = None
        for unit, count in demand.items():
            wanted = min(count, self.capacity.get(unit, 0))
            self.wanted[unit] = self.wanted.get(unit, 0.0) + wanted * elapsed
        if self.series is not None:
            used = {s: dict(u) for s, u in state.usage_by_share().items() if any(u.values())}
            self.series.append((start, used))

    def _use(self, elapsed: float, state: QueueState, demand: dict[str, int]) -> None:
        for share, usage in state.usage_by_share().items():
            sums = self._of(share)
            owned = self.owned.get(share, {})
            for unit, count in usage.items():
                if count:
                    sums.used[unit] = sums.used.get(unit, 0.0) + count * elapsed
                    demand[unit] = demand.get(unit, 0) + count
                    extra = count - owned.get(unit, 0)
                    if extra > 0:
                        sums.borrowed[unit] = sums.borrowed.get(unit, 0.0) + extra * elapsed

    def _wait(
        self,
        elapsed: float,
        state: QueueState,
        pending: Mapping[str, Mapping[str, int]],
        demand: dict[str, int],
    ) -> None:
        for share, waiting in pending.items():
            if not any(waiting.values()):
                continue
            sums = self._of(share)
            for unit, count in waiting.items():
                sums.pending[unit] = sums.pending.get(unit, 0.0) + count * elapsed
                demand[unit] = demand.get(unit, 0) + count
            for unit, count in self._owed(share, state).items():
                sums.violation[unit] = sums.violation.get(unit, 0.0) + count * elapsed

    def _owed(self, share: str, state: QueueState) -> dict[str, int]:
        """Waiting demand of ``share`` its guarantee covers now (see the module docstring)."""
        guarantee = self.guaranteed.get(share)
        if guarantee is None:
            return {}
        view = self._after(state)
        owed: dict[str, int] = {}
        for _, _, job_id in state.queue(share):
            job = state.waiting_job(job_id)
            if job is None:
                break
            if not fits_own_after(view, guarantee, job.demand, ()):
                stoppable = in_share_candidates(state, job, guarantee, ())
                if not stoppable or not fits_own_after(view, guarantee, job.demand, stoppable):
                    break
            view.add(share, job.demand)  # the jobs behind it fit beside it, or not at all
            for unit, count in job.demand.items():
                owed[unit] = owed.get(unit, 0) + count
        return owed

    def _after(self, state: QueueState) -> UsageView:
        """Usage once the preemptions in progress are done (as a cycle's *after* view);
        each share's guarantee reads and adds to its own usage only."""
        if self._view is None:
            self._view = UsageView(self.promised, state.usage_by_share())
            for job in state.terminating():
                self._view.remove(job.share, job.demand)
        return self._view

    def _of(self, share: str) -> Integrals:
        sums = self.integrals.get(share)
        if sums is None:
            sums = self.integrals[share] = Integrals()
        return sums


def _total(values: list[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for value in values:
        for unit, amount in value.items():
            total[unit] = total.get(unit, 0.0) + amount
    return total


def _units(values: Mapping[str, float]) -> dict[str, int | float]:
    return {unit: number(round(amount, 3)) for unit, amount in sorted(values.items())}


def _counts(jobs: list[SimJob]) -> dict[str, int]:
    counts = dict.fromkeys(("succeeded", "failed", "rejected", "runnable", "running"), 0)
    for job in jobs:
        key = job.status.lower()
        if key in counts:
            counts[key] += 1
    return counts


def _block(
    jobs: list[SimJob], sums: list[Integrals], capacity: Mapping[str, float], end: float
) -> dict[str, Any]:
    """The metrics of a group of jobs and their shares' integrals; ``capacity`` is the
    unit-seconds utilization is relative to, ``end`` when the replay stopped."""
    used = _total([s.used for s in sums])
    lost = sum(a.work_lost for job in jobs for a in job.attempts)
    return {
        "utilization": {
            unit: round(used.get(unit, 0.0) / offered, 4) if offered else None
            for unit, offered in sorted(capacity.items())
        },
        "used_unit_seconds": _units(used),
        "borrowed_unit_seconds": _units(_total([s.borrowed for s in sums])),
        "total_wait_seconds": wait_summary(total_waits(jobs, end)),
        "first_start_wait_seconds": wait_summary(first_start_waits(jobs)),
        "pending_unit_seconds": _units(_total([s.pending for s in sums])),
        "guarantee_violation_unit_seconds": _units(_total([s.violation for s in sums])),
        "preemptions": sum(job.preemptions for job in jobs),
        "lost_work_unit_seconds": number(round(lost, 3)),
        "jobs": _counts(jobs),
    }


def replay_metrics(result: Result, meter: Meter, wall_seconds: float) -> dict[str, Any]:
    """The trace metrics, overall and per share.

    ``total_wait_seconds`` and ``first_start_wait_seconds`` are the two waits of
    :mod:`~airflow_quota_provider.simulation.waits` (mean, p50, p95, p99, max).

    A share's ``utilization`` is relative to what it owns (above 1 when it
    borrows; ``null`` for a unit it owns none of); the overall one to the queue's
    capacity until the last job ended, and ``demand_utilization`` to the
    capacity jobs wanted (see the module docstring).
    """
    by_share: dict[str, list[SimJob]] = {share: [] for share in meter.owned}
    for job in result.jobs.values():
        by_share.setdefault(job.spec.share, []).append(job)
    per_share = {}
    for share, jobs in sorted(by_share.items()):
        sums = meter.integrals.get(share, Integrals())
        owned = {u: n * result.end for u, n in meter.owned.get(share, {}).items()}
        per_share[share] = _block(jobs, [sums], owned, result.end)
    overall = _block(
        list(result.jobs.values()),
        list(meter.integrals.values()),
        result.capacity_unit_seconds,
        result.end,
    )
    overall["demand_utilization"] = {
        unit: round(overall_used / wanted, 4) if (wanted := meter.wanted.get(unit)) else None
        for unit, overall_used in sorted(_total([s.used for s in meter.integrals.values()]).items())
    }
    overall["preemptions"] = result.preemptions
    overall["end"] = number(result.end)
    overall["cycles"] = result.cycles
    overall["wall_seconds"] = round(wall_seconds, 3)
    overall["per_share"] = per_share
    return overall
