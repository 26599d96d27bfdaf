"""Choosing whom to preempt for a job that does not fit.

AWS documents *when* a job may be preempted but not *which* jobs are chosen
(its heuristic weighs borrowed instances, priorities and durations without
publishing the rule). This engine adopts Kueue's rules, in this order:

1. **Who may preempt.** With ``in_share_preemption`` a job may preempt
   strictly lower-priority jobs of its own share. A job may *reclaim* (preempt
   jobs of other shares) only if its share stays within what it owns once the
   job runs and those lower-priority jobs of its share are gone: the preemptor
   itself borrows nothing. Both kinds of victim are chosen together, in one
   plan (Kueue's preemption considers the preemptor's own queue and the
   cohort's borrowers together), and a plan that reclaims must leave the
   preemptor within what its share owns.
2. **Who may be a victim.** A job of another share only while that share holds
   more of a needed unit than it owns (it is borrowing, or its capacity was
   lowered). The check is made before each victim is taken, so the last victim
   may take its share below what it owns (otherwise one large, partly borrowing
   job could never be reclaimed). Only jobs that were running before the cycle
   count: a borrower admitted in the same cycle never makes an older job of its
   share a victim (it becomes one itself, first, in the next cycle). Jobs
   younger than ``min_runtime_seconds`` (an opt-in extension; a job's own
   setting wins over its share's, which wins over the queue's) are not
   reclaimed. Jobs marked not preemptible (their work cannot be stopped from
   outside) are never chosen; the preemptor's reason names them. Jobs already
   being preempted are never chosen twice.
3. **Order.** Other shares' jobs before the preemptor's own share; among
   them, jobs that borrowed when they started before jobs that started within
   what their share owned (AWS weighs "the number of instances a job is
   borrowing"; Kueue does not track this); then lower priority first; then
   the most recently started first (least work lost on average) or, with
   ``victim_order: least_work_lost``, the fewest instance-seconds since the
   last checkpoint first; then the job id.
4. **Minimise.** After enough victims are found, walk them in reverse and keep
   running every victim the preemptor does not need.

Why this cannot thrash: a reclaiming job starts within its own share's
capacity, so its share is not borrowing on that unit and its victims (whose
shares are then at or below what they own) cannot reclaim it back; an in-share
victim has a lower priority than its preemptor, so it can never preempt it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.model import QueueConfig, Resources, Share, VictimOrder
from airflow_quota_provider.core.reasons import PreemptionKind, listed
from airflow_quota_provider.core.state import QueueState
from airflow_quota_provider.core.usage import UsageView


@dataclass(frozen=True, slots=True)
class Victim:
    job: RunningJob
    kind: PreemptionKind


@dataclass(frozen=True, slots=True)
class Plan:
    """Victims for one preemptor, or none; ``protected_until`` is the earliest
    time a job skipped for ``min_runtime_seconds`` becomes a candidate;
    ``unstoppable`` the jobs that would have been candidates but are not preemptible."""

    victims: tuple[Victim, ...] | None
    protected_until: float | None = None
    unstoppable: tuple[str, ...] = ()


class _Need:
    """What the preemptor still lacks in a view: free capacity, room under its
    share's limit, and not borrowing where it may not (units held for an earlier
    borrower; every unit when it reclaims)."""

    def __init__(
        self,
        config: QueueConfig,
        share: Share,
        demand: dict[str, int],
        held: Collection[str],
        *,
        reclaims: bool,
    ) -> None:
        self.config = config
        self.share = share
        self.demand = demand
        self.held = held
        self.reclaims = reclaims

    def short_units(self, view: UsageView) -> set[str]:
        name = self.share.name
        return {
            unit
            for unit, need in self.demand.items()
            if need > view.free_for(self.share, unit)
            or view.used(name, unit) + need > self.config.share_limit(self.share, unit)
            or (
                (self.reclaims or unit in self.held)
                and view.used(name, unit) + need > self.share.owns(unit)
            )
        }


def plan_preemption(
    state: QueueState,
    after: UsageView,
    running: UsageView,
    job: WaitingJob,
    share: Share,
    now: float,
    excluded: Collection[str],
    held: Collection[str] = (),
) -> Plan:
    """Victims that make room for ``job`` in the ``after`` view, minimal and in order.

    ``running`` is what the jobs that were running before this cycle hold, less
    those already chosen as victims: whether a share is above what it owns is
    judged on it, so jobs admitted earlier in the same cycle never make another
    job of their share a victim. ``held`` are units whose idle capacity is held
    for an earlier borrower: the job may not borrow them, only make room within
    what its share owns.
    """
    config = state.config
    in_share = in_share_candidates(state, job, share, excluded)
    unstoppable = _unstoppable_in_share(state, job, share)
    may_reclaim = fits_own_after(after, share, job.demand, in_share)
    if not may_reclaim and not in_share:
        # a borrower with no lower-priority job of its own it may preempt has no candidate
        return Plan(None, unstoppable=unstoppable)
    need = _Need(config, share, dict(job.demand), held, reclaims=may_reclaim)
    short = need.short_units(after)
    reclaim, protected_until = [], None
    if may_reclaim:
        found = _reclaim_candidates(state, running, share, short, now, excluded)
        reclaim, protected_until = found.candidates, found.protected_until
        unstoppable += found.unstoppable
    candidates = _ordered(config, reclaim, now, borrowers_first=True) + _ordered(
        config, in_share, now, borrowers_first=False
    )
    if not candidates:
        return Plan(None, protected_until, unstoppable)
    scratch, holding = after.copy(), running.copy()
    chosen: list[Victim] = []
    for candidate in candidates:
        if not short:
            break
        victim = _take(config, holding, candidate, share, short)
        if victim is not None:
            scratch.remove(candidate.share, candidate.demand)
            chosen.append(victim)
            short = need.short_units(scratch)
    if short or not chosen:
        return Plan(None, protected_until, unstoppable)
    for victim in reversed(list(chosen)):
        scratch.add(victim.job.share, victim.job.demand)
        if need.short_units(scratch):
            scratch.remove(victim.job.share, victim.job.demand)
        else:
            chosen.remove(victim)
    return Plan(tuple(chosen), protected_until)


def _take(
    config: QueueConfig, holding: UsageView, job: RunningJob, preemptor: Share, short: set[str]
) -> Victim | None:
    """Take ``job`` out of ``holding`` if it may be taken and helps; say why it was taken."""
    relevant = [u for u in short if job.demand.get(u, 0) > 0]
    if not relevant:
        return None
    if job.share == preemptor.name:
        kind = PreemptionKind.IN_SHARE
    else:
        owner = config.share(job.share)
        over = [u for u in relevant if holding.used(job.share, u) > _owned(owner, u)]
        if not over:
            return None
        beyond_limit = owner is None or any(
            holding.used(job.share, u) > config.share_limit(owner, u) for u in over
        )
        kind = PreemptionKind.CAPACITY_REDUCED if beyond_limit else PreemptionKind.RECLAIM
    holding.remove(job.share, job.demand)
    return Victim(job, kind)


def _owned(share: Share | None, unit: str) -> int:
    return 0 if share is None else share.owns(unit)


@dataclass
class _Reclaimable:
    candidates: list[RunningJob]
    protected_until: float | None = None
    unstoppable: tuple[str, ...] = ()


def _reclaim_candidates(
    state: QueueState,
    running: UsageView,
    share: Share,
    short: set[str],
    now: float,
    excluded: Collection[str],
) -> _Reclaimable:
    """Jobs of other shares above what they own (a job may reclaim only if its share
    stays within what it owns, which the caller checked)."""
    config = state.config
    found = _Reclaimable([])
    for other, usage in state.usage_by_share().items():
        owner = config.share(other)
        if other == share.name or not any(
            running.used(other, u) > _owned(owner, u) for u in short if usage.get(u, 0)
        ):
            continue
        share_min_runtime = config.min_runtime_for(owner) if owner else None
        for candidate in state.running_of(other):
            if candidate.terminating or candidate.id in excluded:
                continue
            if not candidate.preemptible:
                if short & set(candidate.demand):
                    found.unstoppable += (candidate.id,)
                continue
            min_runtime = candidate.min_runtime_seconds
            if min_runtime is None:
                min_runtime = share_min_runtime
            if min_runtime and now - candidate.started < min_runtime:
                until = candidate.started + min_runtime
                if found.protected_until is None or until < found.protected_until:
                    found.protected_until = until
                continue
            found.candidates.append(candidate)
    return found


def in_share_candidates(
    state: QueueState, job: WaitingJob, share: Share, excluded: Collection[str]
) -> list[RunningJob]:
    """The running jobs of ``job``'s own share it may preempt: strictly lower priority,
    not already being preempted, and only where the share has in-share preemption."""
    if not share.in_share_preemption:
        return []
    return [
        running
        for running in state.running_of(share.name)
        if running.priority < job.priority
        and running.preemptible
        and not running.terminating
        and running.id not in excluded
    ]


def _unstoppable_in_share(state: QueueState, job: WaitingJob, share: Share) -> tuple[str, ...]:
    """The share's lower-priority jobs holding a unit ``job`` needs that in-share
    preemption would take if they were preemptible."""
    if not share.in_share_preemption:
        return ()
    return tuple(
        running.id
        for running in state.running_of(share.name)
        if running.priority < job.priority
        and not running.preemptible
        and set(running.demand) & set(job.demand)
    )


def fits_own_after(
    view: UsageView, share: Share, demand: Resources, freed: Iterable[RunningJob]
) -> bool:
    """Whether ``share`` stays within what it owns once a job of ``demand`` runs and
    the share's jobs ``freed`` have stopped: the job would borrow nothing."""
    released: dict[str, int] = {}
    for job in freed:
        for unit, count in job.demand.items():
            released[unit] = released.get(unit, 0) + count
    return all(
        view.used(share.name, unit) - released.get(unit, 0) + need <= share.owns(unit)
        for unit, need in demand.items()
    )


def _ordered(
    config: QueueConfig, jobs: Iterable[RunningJob], now: float, *, borrowers_first: bool
) -> list[RunningJob]:
    least_work_lost = config.victim_order is VictimOrder.LEAST_WORK_LOST

    def key(job: RunningJob) -> tuple[bool, int, float, str]:
        cost = job.work_at_risk(now) if least_work_lost else -job.started
        return (borrowers_first and not job.borrowing, job.priority, cost, job.id)

    return sorted(jobs, key=key)


def describe_victim(
    config: QueueConfig, now: UsageView, victim: Victim, preemptor: WaitingJob
) -> str:
    """Why ``victim`` is preempted, with the numbers."""
    job = victim.job
    wanted = ", ".join(f"{n} {u}" for u, n in sorted(preemptor.demand.items()))
    if victim.kind is PreemptionKind.IN_SHARE:
        return (
            f"job {preemptor.id} (priority {preemptor.priority}) of share {job.share} needs "
            f"{wanted}; this job has priority {job.priority} (in-share preemption)"
        )
    owner = config.share(job.share)
    unit = next(u for u in sorted(job.demand) if now.used(job.share, u) > _owned(owner, u))
    used = now.used(job.share, unit)
    if victim.kind is PreemptionKind.CAPACITY_REDUCED:
        limit = 0 if owner is None else config.share_limit(owner, unit)
        return (
            f"share {job.share} holds {used} {unit} but may now hold {limit} "
            f"(its capacity was lowered); job {preemptor.id} of share {preemptor.share} "
            f"needs {wanted}"
        )
    return (
        f"share {job.share} borrows {used - _owned(owner, unit)} {unit} (uses {used}, owns "
        f"{_owned(owner, unit)}); share {preemptor.share} reclaims it for job {preemptor.id}, "
        f"which needs {wanted} within what its share owns"
    )


def describe_waiting_for(
    state: QueueState, share: Share, demand: Resources, chosen: Collection[str]
) -> str:
    """The waiting message of a job whose room is being freed by preemptions in progress:
    those already under way and those ``chosen`` in this cycle, that hold a unit it needs."""
    stopping = [job for job in state.terminating()]
    stopping += [job for job in map(state.running_job, chosen) if job is not None]
    names = sorted({job.id for job in stopping if set(demand) & set(job.demand)})
    return f"{share.name} waits for preempted jobs to stop: {listed(names)}"
