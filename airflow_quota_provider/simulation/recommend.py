"""Proposing share capacities from a trace.

Candidates, every share ``LEND_AND_BORROW`` without a borrow limit (peaks are
served by borrowing what others leave idle, and reclaimed when the owners
need it):

- ``work``: the queue's capacity of each unit split in proportion to each
  share's *work* (the instance-seconds its jobs in the trace need), so what a
  share owns is about what it needs on average;
- ``blend`` (with a current config): half-way between the current split and ``work``;
- ``current``: the current config itself.

Splits are rounded by largest remainder, so the parts add up to the capacity
exactly. The caller replays each candidate and keeps the one with the least
waiting; the current config stays when nothing beats it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from airflow_quota_provider.core.model import UNLIMITED_BORROW, QueueConfig, Share, Sharing
from airflow_quota_provider.simulation.scenario import JobSpec

Work = Mapping[str, Mapping[str, float]]
"""Instance-seconds per share and unit."""


def work_by_share(jobs: Sequence[JobSpec]) -> dict[str, dict[str, float]]:
    """Instance-seconds each share's jobs need, per unit."""
    work: dict[str, dict[str, float]] = {}
    for job in jobs:
        share = work.setdefault(job.share, {})
        for unit, count in job.demand.items():
            share[unit] = share.get(unit, 0.0) + count * job.duration
    return work


def split(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``total`` split in proportion to ``weights`` by largest remainder (ties by name)."""
    whole = sum(weights.values())
    if whole <= 0:
        return dict.fromkeys(weights, 0)
    exact = {name: total * weight / whole for name, weight in weights.items()}
    parts = {name: math.floor(value) for name, value in exact.items()}
    left = total - sum(parts.values())
    order = sorted(exact, key=lambda name: (-(exact[name] - parts[name]), name))
    for name in order[:left]:
        parts[name] += 1
    return parts


def _fractions(values: Mapping[str, float]) -> dict[str, float]:
    whole = sum(values.values())
    return {name: value / whole if whole else 0.0 for name, value in values.items()}


def candidates(
    job_queue: str,
    capacity: Mapping[str, int],
    jobs: Sequence[JobSpec],
    shares: Sequence[str] = (),
    current: QueueConfig | None = None,
) -> dict[str, QueueConfig]:
    """The candidate configs by name (see the module docstring); shares are ``shares``,
    else the current config's, else the trace's."""
    work = work_by_share(jobs)
    names = list(shares) or ([s.name for s in current.shares] if current else sorted(work))
    found = {"work": _config(job_queue, capacity, names, lambda unit: _work(work, names, unit))}
    if current is not None:
        found["blend"] = _config(
            job_queue, capacity, names, lambda unit: _blend(current, work, names, unit)
        )
        found["current"] = current
    return found


def _work(work: Work, names: Sequence[str], unit: str) -> dict[str, float]:
    return {name: work.get(name, {}).get(unit, 0.0) for name in names}


def _blend(current: QueueConfig, work: Work, names: Sequence[str], unit: str) -> dict[str, float]:
    now = _fractions({n: float(s.owns(unit)) if (s := current.share(n)) else 0.0 for n in names})
    needed = _fractions(_work(work, names, unit))
    return {name: (now[name] + needed[name]) / 2 for name in names}


def _config(
    job_queue: str,
    capacity: Mapping[str, int],
    names: Sequence[str],
    weights: Callable[[str], Mapping[str, float]],
) -> QueueConfig:
    owned: dict[str, dict[str, int]] = {name: {} for name in names}
    for unit, total in capacity.items():
        for name, part in split(total, weights(unit)).items():
            owned[name][unit] = part
    return QueueConfig(
        job_queue=job_queue,
        capacity=dict(capacity),
        shares=tuple(
            Share(name, owned[name], Sharing.LEND_AND_BORROW, UNLIMITED_BORROW) for name in names
        ),
    )
