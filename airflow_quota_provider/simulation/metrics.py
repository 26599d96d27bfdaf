"""What a replay did to each share: use, waiting demand and broken guarantees over time.

A :class:`Meter` is told the queue's state after every instant of a replay
settles and integrates, until the next instant, per share and unit:

- ``used``: instances held (jobs being preempted included, they still hold them);
- ``borrowed``: the part of ``used`` beyond what the share owns;
- ``pending``: instances asked for by the share's waiting jobs;
- ``wanted`` (whole queue only): the capacity jobs could have used, the
  smaller of the queue's capacity and what runs plus what waits; used over
  wanted is 1 for a scheduler that never leaves capacity idle while jobs wait;
- ``guarantee_violation``: waiting demand the share's guarantee covers but
  which does not run: the share's waiting jobs, taken in dispatch order while
  they fit together in what it owns and does not use. A job that would take
  its share beyond what it owns is not covered (it would borrow), so neither
  is anything behind it.

Guarantees are those of the config the meter is given (the config as
written), whatever policy the replay schedules with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.state import QueueState
from airflow_quota_provider.simulation.output import number, percentile
from airflow_quota_provider.simulation.simulator import Result, SimJob

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

    def __init__(self, config: QueueConfig, *, series: bool = False) -> None:
        self.owned = {share.name: dict(share.capacity) for share in config.shares}
        self.capacity = dict(config.capacity)
        self.wanted: dict[str, float] = {}
        self.now_wanted: dict[str, int] = {}
        self.integrals: dict[str, Integrals] = {}
        self.last = 0.0
        self.now_used: Usage = {}
        self.now_pending: Usage = {}
        self.now_violation: Usage = {}
        self.series: list[tuple[float, Usage]] | None = [] if series else None

    def observe(
        self, now: float, state: QueueState, pending: Mapping[str, Mapping[str, int]]
    ) -> None:
        """The state after the instant ``now`` settled (the previous one held until ``now``)."""
        elapsed = now - self.last
        if elapsed > 0:
            self._integrate(elapsed)
        self.last = now
        used = {s: dict(u) for s, u in state.usage_by_share().items() if any(u.values())}
        self.now_used = used
        self.now_pending = {s: dict(p) for s, p in pending.items() if any(p.values())}
        self.now_violation = {
            share: owed for share in self.now_pending if (owed := self._owed(share, state, used))
        }
        self.now_wanted = self._wanted()
        if self.series is not None:
            self.series.append((now, used))

    def _wanted(self) -> dict[str, int]:
        demand: dict[str, int] = {}
        for usage in (*self.now_used.values(), *self.now_pending.values()):
            for unit, count in usage.items():
                demand[unit] = demand.get(unit, 0) + count
        return {unit: min(count, self.capacity.get(unit, 0)) for unit, count in demand.items()}

    def _owed(self, share: str, state: QueueState, used: Usage) -> dict[str, int]:
        """Waiting demand of ``share`` its guarantee covers now (see the module docstring)."""
        owned = self.owned.get(share)
        if not owned:
            return {}
        holds = used.get(share, {})
        room = {unit: owned[unit] - holds.get(unit, 0) for unit in owned}
        if not any(free > 0 for free in room.values()):
            return {}
        owed: dict[str, int] = {}
        for _, _, job_id in state.queue(share):
            job = state.waiting_job(job_id)
            if job is None or any(room.get(u, 0) < n for u, n in job.demand.items()):
                break
            for unit, count in job.demand.items():
                room[unit] -= count
                owed[unit] = owed.get(unit, 0) + count
        return owed

    def _integrate(self, elapsed: float) -> None:
        for share, usage in self.now_used.items():
            sums = self._of(share)
            owned = self.owned.get(share, {})
            for unit, count in usage.items():
                sums.used[unit] = sums.used.get(unit, 0.0) + count * elapsed
                extra = count - owned.get(unit, 0)
                if extra > 0:
                    sums.borrowed[unit] = sums.borrowed.get(unit, 0.0) + extra * elapsed
        for share, usage in self.now_pending.items():
            _add(self._of(share).pending, usage, elapsed)
        for share, usage in self.now_violation.items():
            _add(self._of(share).violation, usage, elapsed)
        _add(self.wanted, self.now_wanted, elapsed)

    def _of(self, share: str) -> Integrals:
        sums = self.integrals.get(share)
        if sums is None:
            sums = self.integrals[share] = Integrals()
        return sums


def _add(sums: dict[str, float], usage: Mapping[str, int], elapsed: float) -> None:
    for unit, count in usage.items():
        sums[unit] = sums.get(unit, 0.0) + count * elapsed


def _total(values: list[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for value in values:
        for unit, amount in value.items():
            total[unit] = total.get(unit, 0.0) + amount
    return total


def _units(values: Mapping[str, float]) -> dict[str, int | float]:
    return {unit: number(round(amount, 3)) for unit, amount in sorted(values.items())}


def _waits(jobs: list[SimJob]) -> dict[str, int | float]:
    waits = sorted(j.attempts[0].start - j.spec.submit for j in jobs if j.attempts)
    return {
        "mean": number(sum(waits) / len(waits)) if waits else 0,
        "p50": number(percentile(waits, 0.50)),
        "p95": number(percentile(waits, 0.95)),
        "p99": number(percentile(waits, 0.99)),
        "max": number(waits[-1]) if waits else 0,
    }


def _counts(jobs: list[SimJob]) -> dict[str, int]:
    counts = dict.fromkeys(("succeeded", "failed", "rejected", "runnable", "running"), 0)
    for job in jobs:
        key = job.status.lower()
        if key in counts:
            counts[key] += 1
    return counts


def _block(
    jobs: list[SimJob], sums: list[Integrals], capacity: Mapping[str, float]
) -> dict[str, Any]:
    """The metrics of a group of jobs and their shares' integrals; ``capacity`` is the
    unit-seconds utilization is relative to."""
    used = _total([s.used for s in sums])
    lost = sum(a.work_lost for job in jobs for a in job.attempts)
    return {
        "utilization": {
            unit: round(used.get(unit, 0.0) / offered, 4) if offered else None
            for unit, offered in sorted(capacity.items())
        },
        "used_unit_seconds": _units(used),
        "borrowed_unit_seconds": _units(_total([s.borrowed for s in sums])),
        "wait_seconds": _waits(jobs),
        "pending_unit_seconds": _units(_total([s.pending for s in sums])),
        "guarantee_violation_unit_seconds": _units(_total([s.violation for s in sums])),
        "preemptions": sum(job.preemptions for job in jobs),
        "lost_work_unit_seconds": number(round(lost, 3)),
        "jobs": _counts(jobs),
    }


def replay_metrics(result: Result, meter: Meter, wall_seconds: float) -> dict[str, Any]:
    """The trace metrics, overall and per share.

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
        per_share[share] = _block(jobs, [sums], owned)
    overall = _block(
        list(result.jobs.values()), list(meter.integrals.values()), result.capacity_unit_seconds
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
