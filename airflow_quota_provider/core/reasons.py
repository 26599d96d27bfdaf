"""Reason codes: why a job waits, why it was refused, why it failed, why it was preempted.

Codes are stable, machine-readable names (the UI, the CLI and the task log
show them); every reason also carries a message with the numbers in it.
"""

from __future__ import annotations

import enum


class WaitCode(str, enum.Enum):
    """Why a job is still waiting, from the most to the least fundamental."""

    SHARE_DISABLED = "SHARE_DISABLED"
    """The share is DISABLED: its waiting jobs are not dispatched."""
    BORROWING_NOT_ALLOWED = "BORROWING_NOT_ALLOWED"
    """The share's own capacity is in use and its strategy (RESERVE, LEND) never borrows."""
    BORROW_LIMIT_REACHED = "BORROW_LIMIT_REACHED"
    """Starting the job would take the share beyond ``capacity x (1 + borrow_limit/100)``."""
    QUEUE_CAPACITY_IN_USE = "QUEUE_CAPACITY_IN_USE"
    """No borrow limit stops the job (the share borrows without limit, or its limit allows
    more than the queue has), but it and what its share holds already are more than the
    queue's (a pools fleet's) whole capacity: it waits until the share's own jobs leave
    room. The message says what is free and who holds the rest."""
    WAITING_FOR_OWN_CAPACITY = "WAITING_FOR_OWN_CAPACITY"
    """The job fits in what its share owns, but that capacity is held by jobs
    that cannot be preempted now: the share's own jobs (in-share preemption off,
    or not of lower priority; while they hold it the job would borrow, so it may
    not reclaim), jobs protected by ``min_runtime_seconds``, jobs admitted
    earlier in the same cycle (they are reclaimed in the next one), or the
    queue's capacity was lowered."""
    NO_IDLE_CAPACITY = "NO_IDLE_CAPACITY"
    """The share may borrow, but not enough idle capacity is there to lend."""
    BEHIND_EARLIER_BORROWER = "BEHIND_EARLIER_BORROWER"
    """Idle capacity is held for a borrower that asked earlier (FIFO)."""
    PREEMPTION_IN_PROGRESS = "PREEMPTION_IN_PROGRESS"
    """Jobs are being preempted to make room for this one."""
    BEHIND_IN_SHARE = "BEHIND_IN_SHARE"
    """A higher-priority or earlier job of the same share is dispatched first."""


class RefusalCode(str, enum.Enum):
    """Why a job was refused at submission: it could never run as asked."""

    UNKNOWN_SHARE = "UNKNOWN_SHARE"
    SHARE_DISABLED = "SHARE_DISABLED"
    INVALID_PRIORITY = "INVALID_PRIORITY"
    INVALID_DEMAND = "INVALID_DEMAND"
    UNKNOWN_UNIT = "UNKNOWN_UNIT"
    EXCEEDS_QUEUE_CAPACITY = "EXCEEDS_QUEUE_CAPACITY"
    EXCEEDS_MAX_QUOTA = "EXCEEDS_MAX_QUOTA"


class FailureCode(str, enum.Enum):
    """Why the core ended a job that had been accepted."""

    PREEMPTION_RETRIES_EXHAUSTED = "PREEMPTION_RETRIES_EXHAUSTED"
    NO_LONGER_FITS = "NO_LONGER_FITS"
    """The job needs more than its share or the queue can hold now: in a live queue, the
    capacity was lowered after the job was accepted (the cycle's message says so); in a
    forecast, which never changes the capacity, it is as it is now."""
    SHARE_REMOVED = "SHARE_REMOVED"


class PreemptionKind(str, enum.Enum):
    """Why a running job is preempted."""

    RECLAIM = "RECLAIM"
    """Its share borrows capacity that the owning share needs back."""
    IN_SHARE = "IN_SHARE"
    """A higher-priority job of its own share needs the capacity."""
    CAPACITY_REDUCED = "CAPACITY_REDUCED"
    """Its share holds more than its lowered capacity allows."""


PREEMPTION_HEADLINES = {
    # AWS's documented wording for reclaim; the other two are this engine's own.
    PreemptionKind.RECLAIM: "Cross-share preemption triggered to reclaim borrowed capacity",
    PreemptionKind.IN_SHARE: "In-share preemption triggered by a higher priority job",
    PreemptionKind.CAPACITY_REDUCED: (
        "Preemption triggered because the quota share's capacity limits were lowered"
    ),
}
"""The headline of a preempted attempt's ``statusReason``, before the engine's message:
Batch (and the local endpoint) write it, the view reads the kind back from it."""


def listed(names: list[str], most: int = 5) -> str:
    """``names`` joined with commas, the first ``most`` of them and how many more."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def amount(count: int, unit: str) -> str:
    return f"{count} {unit}"


def borrow_limit_text(limit: int) -> str:
    return "unlimited, borrow_limit -1" if limit < 0 else f"borrow_limit {limit}%"


def ordinal(n: int) -> str:
    teen = 10 <= n % 100 <= 20
    suffix = "th" if teen else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
