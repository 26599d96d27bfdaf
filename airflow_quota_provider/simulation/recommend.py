"""Searching share capacities and strategies that wait less: a guided local search.

The objective, compared in this order (smaller is better):

1. jobs refused at submission;
2. guarantee violation (unit-seconds, all units and shares) above the
   *allowance*, the baseline config's violation; the caller measures it
   against the guarantees shares have today (the baseline's), so taking a
   share's capacity away does not hide its waiting;
3. mean total wait per job: all the time a job waited to run, before its first
   start and after every preemption until it ran again (see
   :mod:`~airflow_quota_provider.simulation.waits`), so a config whose
   preempted jobs then wait long is not rewarded for starting jobs early.

So a proposal never refuses more jobs nor breaks guarantees more than the
baseline (the current config), and among those the least mean total wait wins.

Each step derives moves from the last kept replay and tries them in order:

- *open* a share: one with waiting demand that does not borrow without limit
  becomes ``LEND_AND_BORROW`` without a borrow limit; a ``RESERVE`` share that
  leaves owned capacity idle becomes ``LEND`` (AWS reclaims lent capacity, so
  its guarantee stays);
- *move* ``step`` instances of a unit from a share that leaves the largest
  part of what it owns idle to a share whose jobs waited longest all together
  (its part of the mean total wait; the three of each, every pair), at most half
  of what the donor owns; what a share owns is what reclaim gives back to it;
- *limit* a borrower: one of the three that borrow most gets the next lower
  borrow limit of :data:`BORROW_LIMITS` (under FIFO idle assignment a large
  borrower can take all idle capacity ahead of others' jobs).

The first move that scores better is kept and the moves are derived again from
its replay; a move that did not help is not tried again at the same step. When
no move helps, the step halves, down to one instance. The search
stops when the budget of replays is spent or no move of one instance helps.
Moves are ordered by the replay's figures with ties by name, and a replay is
deterministic, so the same input always gives the same proposal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from airflow_quota_provider.core.model import UNLIMITED_BORROW, QueueConfig, Share, Sharing
from airflow_quota_provider.simulation.scenario import JobSpec

Metrics = Mapping[str, Any]
"""A replay's metrics (see ``replay_metrics``)."""
Evaluate = Callable[[QueueConfig], Metrics]
"""Replays the trace under a config."""

_RANKED = 3
"""Donors and receivers of capacity, and borrowers to limit, tried per step."""
BORROW_LIMITS = (200, 100, 50, 0)
"""Borrow limits (percent) tried for a share that borrows most, from the top down."""


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


def starting_point(
    job_queue: str,
    capacity: Mapping[str, int],
    names: Sequence[str],
    jobs: Sequence[JobSpec],
    current: QueueConfig | None = None,
) -> QueueConfig:
    """Where the search starts: the current config with each unit's ``capacity`` split
    like it splits its own (itself when the capacity is the same); without one, the
    capacity split by each share's work, every share lending and borrowing without limit."""
    work = work_by_share(jobs)
    shares = []
    for name in names:
        share = current.share(name) if current else None
        shares.append(share or Share(name, {}, Sharing.LEND_AND_BORROW, UNLIMITED_BORROW))
    owned: dict[str, dict[str, int]] = {name: {} for name in names}
    for unit, total in sorted(capacity.items()):
        weights = {
            s.name: float(s.owns(unit)) if current else work.get(s.name, {}).get(unit, 0.0)
            for s in shares
        }
        if current is not None:  # what no share owns stays unowned ("" is no share's name)
            weights[""] = float(current.unowned(unit))
        for name, part in split(total, weights).items():
            if name:
                owned[name][unit] = part
    return QueueConfig(
        job_queue=job_queue,
        capacity=dict(capacity),
        shares=tuple(replace(s, capacity=owned[s.name]) for s in shares),
        idle_assignment=current.idle_assignment if current else QueueConfig.idle_assignment,
        min_runtime_seconds=current.min_runtime_seconds if current else None,
        victim_order=current.victim_order if current else QueueConfig.victim_order,
    )


@dataclass(frozen=True, order=True)
class Score:
    """A replay's place in the objective (see the module docstring)."""

    refused: int
    excess_violation: float
    mean_wait: float


def score(metrics: Metrics, allowance: float) -> Score:
    violation = sum(metrics["guarantee_violation_unit_seconds"].values())
    return Score(
        metrics["jobs"]["rejected"],
        max(0.0, violation - allowance),
        float(metrics["total_wait_seconds"]["mean"]),
    )


def violation(metrics: Metrics) -> float:
    return float(sum(metrics["guarantee_violation_unit_seconds"].values()))


@dataclass(frozen=True)
class Move:
    description: str
    config: QueueConfig


@dataclass(frozen=True)
class Trial:
    """One replay of the search: the move tried, its score, and whether it was kept."""

    number: int
    move: str
    score: Score
    kept: bool


@dataclass(frozen=True)
class Search:
    """The search's outcome: the best config, its metrics, and every trial in order."""

    config: QueueConfig
    metrics: Metrics
    trials: tuple[Trial, ...]
    allowance: float
    stopped: str
    """``budget`` (every replay spent) or ``local optimum`` (no move of one instance helps)."""

    @property
    def kept(self) -> list[Trial]:
        return [t for t in self.trials if t.kept]


def search(
    start: QueueConfig,
    start_metrics: Metrics,
    evaluate: Evaluate,
    budget: int,
    allowance: float,
    on_trial: Callable[[Trial, Score], None] | None = None,
) -> Search:
    """Search from ``start`` (replayed: ``start_metrics``) with at most ``budget``
    replays, the start's included; ``allowance`` is the guarantee violation a proposal
    may have (unit-seconds)."""
    best, best_metrics = start, start_metrics
    best_score = score(best_metrics, allowance)
    trials = [Trial(1, "start", best_score, True)]
    seen = {_key(start)}
    failed: set[str] = set()  # moves that did not help, not tried again at the same step
    steps = {
        u: max(1, total // max(2, 2 * len(start.shares))) for u, total in start.capacity.items()
    }
    while len(trials) < budget and any(steps.values()):
        kept = False
        for move in moves(best, best_metrics, steps):
            if _key(move.config) in seen or move.description in failed:
                continue
            seen.add(_key(move.config))
            metrics = evaluate(move.config)
            tried = score(metrics, allowance)
            kept = tried < best_score
            trials.append(Trial(len(trials) + 1, move.description, tried, kept))
            if kept:
                best, best_metrics, best_score = move.config, metrics, tried
            else:
                failed.add(move.description)
            if on_trial is not None:
                on_trial(trials[-1], best_score)
            if kept or len(trials) >= budget:
                break
        if not kept and len(trials) < budget:
            steps = {unit: step // 2 for unit, step in steps.items()}
            failed.clear()
    stopped = "budget" if any(steps.values()) else "local optimum"
    return Search(best, best_metrics, tuple(trials), allowance, stopped)


def moves(config: QueueConfig, metrics: Metrics, steps: Mapping[str, int]) -> Iterator[Move]:
    """The moves from ``config`` in the order they are tried (see the module docstring)."""
    per_share = metrics["per_share"]
    end = float(metrics["end"])
    for share in _ranked(config, lambda s: _pending(per_share, s.name)):
        if _pending(per_share, share.name) > 0 and not _borrows_freely(share):
            yield _open(config, share, Sharing.LEND_AND_BORROW)
    for share in _ranked(config, lambda s: _idle(per_share, s, end)):
        if share.sharing is Sharing.RESERVE and _idle(per_share, share, end) > 0:
            yield _open(config, share, Sharing.LEND)
    for unit, step in sorted(steps.items()):
        if step:
            yield from _transfers(config, per_share, end, unit, step)
    for share in _ranked(config, lambda s: _borrowed(per_share, s.name))[:_RANKED]:
        lower = _lower_limit(share)
        if _borrowed(per_share, share.name) > 0 and lower is not None:
            opened = replace(share, borrow_limit=lower)
            yield Move(f"{share.name} borrow limit {lower}%", _with(config, opened))


def _transfers(
    config: QueueConfig, per_share: Metrics, end: float, unit: str, step: int
) -> Iterator[Move]:
    waiting = [
        s
        for s in _ranked(config, lambda s: _waited(per_share, s.name))
        if _pending(per_share, s.name, unit) > 0
    ][:_RANKED]
    idle = [
        s
        for s in _ranked(config, lambda s: _idle(per_share, s, end, unit))
        if s.owns(unit) > 0 and _idle(per_share, s, end, unit) > 0
    ][:_RANKED]
    for receiver in waiting:
        for donor in idle:
            if donor.name != receiver.name:
                count = min(step, max(1, donor.owns(unit) // 2))
                yield Move(
                    f"{count} {unit} from {donor.name} to {receiver.name}",
                    _transfer(config, unit, count, donor.name, receiver.name),
                )


def _ranked(config: QueueConfig, figure: Callable[[Share], float]) -> list[Share]:
    """Shares by ``figure``, highest first, ties by name."""
    return sorted(config.shares, key=lambda s: (-figure(s), s.name))


def _pending(per_share: Metrics, name: str, unit: str | None = None) -> float:
    pending = per_share.get(name, {}).get("pending_unit_seconds", {})
    return float(pending.get(unit, 0.0) if unit else sum(pending.values()))


def _waited(per_share: Metrics, name: str) -> float:
    """Seconds the share's jobs waited, all together: its part of the mean total wait
    (which counts every job not refused)."""
    data = per_share.get(name, {})
    if not data:
        return 0.0
    jobs = data["jobs"]
    waited = jobs["succeeded"] + jobs["failed"] + jobs["running"] + jobs["runnable"]
    return float(data["total_wait_seconds"]["mean"] * waited)


def _idle(per_share: Metrics, share: Share, end: float, unit: str | None = None) -> float:
    """The part of what ``share`` owns that it did not use itself (lent or idle), 0 to 1:
    a share that uses little of a small guarantee gives before one that uses half of a
    large one (whose bursts the guarantee serves)."""
    data = per_share.get(share.name, {})
    used, borrowed = data.get("used_unit_seconds", {}), data.get("borrowed_unit_seconds", {})
    units = [unit] if unit else list(share.capacity)
    owned = sum(share.owns(u) for u in units) * end
    own_use = sum(used.get(u, 0.0) - borrowed.get(u, 0.0) for u in units)
    return float(1 - own_use / owned) if owned > 0 else 0.0


def _borrowed(per_share: Metrics, name: str) -> float:
    return float(sum(per_share.get(name, {}).get("borrowed_unit_seconds", {}).values()))


def _lower_limit(share: Share) -> int | None:
    """The next borrow limit down the ladder; ``None`` at its foot, or if ``share``
    does not borrow or owns nothing."""
    if not share.sharing.borrows or not any(share.capacity.values()):
        return None  # a limit is a share of what it owns: nothing owned, nothing to borrow
    if share.borrow_limit == UNLIMITED_BORROW:
        return BORROW_LIMITS[0]
    lower = [limit for limit in BORROW_LIMITS if limit < share.borrow_limit]
    return lower[0] if lower else None


def _borrows_freely(share: Share) -> bool:
    return share.sharing is Sharing.LEND_AND_BORROW and share.borrow_limit == UNLIMITED_BORROW


def _open(config: QueueConfig, share: Share, sharing: Sharing) -> Move:
    opened = replace(share, sharing=sharing, borrow_limit=UNLIMITED_BORROW)
    what = "without a borrow limit" if sharing is Sharing.LEND_AND_BORROW else ""
    return Move(f"{share.name} {sharing.value} {what}".rstrip(), _with(config, opened))


def _with(config: QueueConfig, changed: Share) -> QueueConfig:
    return replace(
        config, shares=tuple(changed if s.name == changed.name else s for s in config.shares)
    )


def _transfer(config: QueueConfig, unit: str, count: int, donor: str, receiver: str) -> QueueConfig:
    def moved(share: Share) -> Share:
        delta = -count if share.name == donor else count if share.name == receiver else 0
        if not delta:
            return share
        return replace(share, capacity={**share.capacity, unit: share.owns(unit) + delta})

    return replace(config, shares=tuple(moved(s) for s in config.shares))


def _key(config: QueueConfig) -> tuple[tuple[Any, ...], ...]:
    return tuple(
        (s.name, tuple(sorted(s.capacity.items())), s.sharing, s.borrow_limit)
        for s in config.shares
    )
