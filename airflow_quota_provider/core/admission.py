"""Does a job fit? At submission (could it ever run?) and in a cycle (can it run now?)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from airflow_quota_provider.core.jobs import WaitingJob
from airflow_quota_provider.core.model import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    QueueConfig,
    Resources,
    Share,
)
from airflow_quota_provider.core.reasons import RefusalCode, WaitCode, borrow_limit_text, listed
from airflow_quota_provider.core.usage import UsageView


@dataclass(frozen=True, slots=True)
class Refusal:
    code: RefusalCode
    message: str


def check_submission(config: QueueConfig, job: WaitingJob) -> Refusal | None:
    """Why ``job`` could never run in its share, or ``None`` if it could."""
    share = config.share(job.share)
    if share is None:
        names = ", ".join(s.name for s in config.shares)
        return Refusal(
            RefusalCode.UNKNOWN_SHARE,
            f"share {job.share} does not exist in {config.title}; its shares are {names}",
        )
    if not share.enabled:
        return Refusal(
            RefusalCode.SHARE_DISABLED,
            f"share {share.name} is DISABLED and accepts no new jobs",
        )
    if isinstance(job.priority, bool) or not MIN_PRIORITY <= job.priority <= MAX_PRIORITY:
        return Refusal(
            RefusalCode.INVALID_PRIORITY,
            f"priority must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY} "
            f"(higher runs first), got {job.priority!r}",
        )
    return _check_demand(config, job.demand) or check_fits_ever(config, share, job.demand)


def _check_demand(config: QueueConfig, demand: Resources) -> Refusal | None:
    if not demand or any(not isinstance(c, int) or c < 1 for c in demand.values()):
        return Refusal(
            RefusalCode.INVALID_DEMAND,
            f"demand must name at least one unit, each with a count of at least 1; "
            f"got {dict(demand)!r}",
        )
    unknown = sorted(set(demand) - set(config.capacity))
    if unknown:
        return Refusal(
            RefusalCode.UNKNOWN_UNIT,
            f"{config.title} has no {', '.join(unknown)}; it has {', '.join(config.units)}",
        )
    return None


def check_fits_ever(config: QueueConfig, share: Share, demand: Resources) -> Refusal | None:
    """Why ``demand`` is more than the queue or ``share`` could ever hold, if it is."""
    for unit in sorted(demand):
        need = demand[unit]
        queue_has = config.capacity.get(unit, 0)
        if need > queue_has:
            return Refusal(
                RefusalCode.EXCEEDS_QUEUE_CAPACITY,
                f"the job needs {need} {unit}; {config.title} has {queue_has}",
            )
        limit = config.share_limit(share, unit)
        if need > limit:
            return Refusal(
                RefusalCode.EXCEEDS_MAX_QUOTA,
                f"the job needs {need} {unit}; share {share.name} may hold at most {limit} "
                f"(owns {share.owns(unit)}, {borrowing_terms(share)})",
            )
    return None


def borrowing_terms(share: Share) -> str:
    """How far ``share`` may borrow, as messages say it: ``borrow_limit 50%``."""
    if not share.sharing.borrows:
        return f"{share.sharing.value} does not borrow"
    return borrow_limit_text(share.borrow_limit)


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Why a job does not fit in a view now, at the first unit that stops it."""

    code: WaitCode
    unit: str
    message: str


def within_own(view: UsageView, share: Share, demand: Resources) -> bool:
    """Whether the share stays within what it owns once the job runs (it borrows nothing)."""
    return all(view.used(share.name, u) + d <= share.owns(u) for u, d in demand.items())


def borrowed_by(view: UsageView, share: Share, demand: Resources) -> dict[str, int]:
    """How much of each unit the share would borrow on top if the job started."""
    result = {}
    for unit, need in demand.items():
        used = view.used(share.name, unit)
        owned = share.owns(unit)
        result[unit] = max(0, used + need - owned) - max(0, used - owned)
    return result


def assess(
    config: QueueConfig,
    view: UsageView,
    share: Share,
    demand: Resources,
    held: Mapping[str, str],
) -> Shortfall | None:
    """The reason ``demand`` cannot start in ``view`` now, or ``None`` if it can.

    ``held`` maps units whose idle capacity is held for an earlier borrower to
    that borrower's job id.
    """
    units = sorted(demand)
    for unit in units:
        shortfall = _over_limit(config, view, share, unit, demand[unit])
        if shortfall:
            return shortfall
    for unit in units:
        shortfall = _short_of_free(config, view, share, unit, demand[unit])
        if shortfall:
            return shortfall
    for unit, extra in sorted(borrowed_by(view, share, demand).items()):
        holder = held.get(unit)
        if extra > 0 and holder is not None:
            rule = config.idle_assignment.value
            return Shortfall(
                WaitCode.BEHIND_EARLIER_BORROWER,
                unit,
                f"{share.name} needs to borrow {extra} {unit}; idle {unit} is held for "
                f"{holder}, which borrows first ({rule})",
            )
    return None


def _over_limit(
    config: QueueConfig, view: UsageView, share: Share, unit: str, need: int
) -> Shortfall | None:
    used = view.used(share.name, unit)
    if used + need <= config.share_limit(share, unit):
        return None
    owned = share.owns(unit)
    head = f"{share.name} needs {need} {unit}; it uses {used} of {owned}"
    if not share.sharing.borrows:
        return Shortfall(
            WaitCode.BORROWING_NOT_ALLOWED,
            unit,
            f"{head} and its sharing strategy {share.sharing.value} does not borrow",
        )
    cap = share.borrow_cap(unit)
    if cap is not None and cap <= config.capacity.get(unit, 0):
        more = max(0, cap - max(used, owned))
        terms = f"may borrow {more} more ({borrow_limit_text(share.borrow_limit)})"
        return Shortfall(WaitCode.BORROW_LIMIT_REACHED, unit, f"{head} and {terms}")
    # its borrow limit would let it hold more than the queue has: the queue stops it
    if cap is None:
        may = "may borrow without limit (borrow_limit -1)"
    else:
        may = f"its borrow_limit {share.borrow_limit}% would let it hold {cap}"
    in_use = _queue_in_use(config, view, share, unit)
    return Shortfall(WaitCode.QUEUE_CAPACITY_IN_USE, unit, f"{head} and {may}, but {in_use}")


def _queue_in_use(config: QueueConfig, view: UsageView, share: Share, unit: str) -> str:
    """What the queue has of ``unit``, what of it is free for ``share`` and who holds the
    rest: ``job queue q has 16 gpu in all, 1 free; nlp holds 12, cv 3``."""
    capacity = config.capacity.get(unit, 0)
    free = max(0, view.free_for(share, unit))
    text = f"{config.title} has {capacity} {unit} in all, {free} free"
    reserved = capacity - view.total.get(unit, 0) - free
    if reserved > 0:
        text += f" ({reserved} more idle in RESERVE shares, which do not lend it)"
    holders = sorted(
        ((count, name) for name, usage in view.by_share.items() if (count := usage.get(unit, 0))),
        key=lambda holder: (-holder[0], holder[1]),
    )
    if not holders:
        return text
    (most, first), rest = holders[0], holders[1:]
    return f"{text}; " + listed([f"{first} holds {most}", *(f"{n} {c}" for c, n in rest)])


def _short_of_free(
    config: QueueConfig, view: UsageView, share: Share, unit: str, need: int
) -> Shortfall | None:
    free = view.free_for(share, unit)
    if need <= free:
        return None
    used = view.used(share.name, unit)
    owned = share.owns(unit)
    if used + need <= owned:
        return Shortfall(
            WaitCode.WAITING_FOR_OWN_CAPACITY,
            unit,
            f"{share.name} needs {need} {unit} within what it owns (uses {used} of {owned}); "
            f"{max(0, free)} free, the rest is held by jobs that cannot be preempted now",
        )
    lendable = max(0, free - max(0, owned - used))
    if need <= owned and used < owned:
        # It fits what its share owns, part of which is lent, but the share's own jobs
        # hold the rest: it would borrow if it started now, so it may not reclaim.
        return Shortfall(
            WaitCode.WAITING_FOR_OWN_CAPACITY,
            unit,
            f"{share.name} needs {need} {unit}; it uses {used} of {owned} and waits for its "
            f"own jobs to leave room (a job that would borrow does not reclaim lent {unit}); "
            f"only {lendable} idle {unit} can be lent to it meanwhile ({need - free} more needed)",
        )
    if share.borrow_limit < 0:
        may = "may borrow without limit (borrow_limit -1)"
    else:
        more = max(0, config.share_limit(share, unit) - max(used, owned))
        may = f"may borrow {more} more (borrow_limit {share.borrow_limit}%)"
    return Shortfall(
        WaitCode.NO_IDLE_CAPACITY,
        unit,
        f"{share.name} needs {need} {unit}; it uses {used} of {owned} and {may}, "
        f"but only {lendable} idle {unit} can be lent to it ({need - free} more needed)",
    )
