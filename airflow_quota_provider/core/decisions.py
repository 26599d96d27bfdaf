"""What one scheduling cycle decided, each decision with its reason."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from airflow_quota_provider.core.model import Resources
from airflow_quota_provider.core.reasons import (
    FailureCode,
    PreemptionKind,
    WaitCode,
    ordinal,
)
from airflow_quota_provider.core.state import QueueEntry


@dataclass(frozen=True, slots=True)
class Admission:
    """Start this job now. ``borrowed`` is how much of each unit it borrows."""

    job_id: str
    share: str
    borrowed: Resources


@dataclass(frozen=True, slots=True)
class Preemption:
    """Stop this running job to make room for ``preemptor``.

    :param fails: the job's preemption retries are used up: it ends FAILED
        instead of going back to waiting.
    :param work_lost: instance-seconds of work since its last checkpoint.
    """

    job_id: str
    share: str
    kind: PreemptionKind
    preemptor: str
    message: str
    fails: bool
    work_lost: float


@dataclass(frozen=True, slots=True)
class Failure:
    """End this waiting job: it can no longer run."""

    job_id: str
    code: FailureCode
    message: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Why a job is left waiting."""

    job_id: str
    share: str
    code: WaitCode
    message: str


@dataclass(frozen=True)
class ShareQueueView:
    """Where a share's queue stopped in a cycle: ``head`` (the first job left
    waiting, with its reason) and the jobs behind it."""

    share: str
    entries: list[QueueEntry]
    start: int
    head: Wait


class WaitingReasons(Mapping[str, Wait]):
    """Reasons of every job left waiting, keyed by job id.

    Heads carry the reason the cycle found; jobs behind a head are described
    on access, so a cycle over a long queue does not pay for 10,000 messages
    nobody reads.
    """

    def __init__(self, views: list[ShareQueueView]) -> None:
        self._views = views
        self._index: dict[str, tuple[ShareQueueView, int]] | None = None

    def _positions(self) -> dict[str, tuple[ShareQueueView, int]]:
        if self._index is None:
            self._index = {
                job_id: (view, position)
                for view in self._views
                for position, (_, _, job_id) in enumerate(view.entries[view.start :])
            }
        return self._index

    def __getitem__(self, job_id: str) -> Wait:
        view, position = self._positions()[job_id]
        if position == 0:
            return view.head
        if view.head.code is WaitCode.SHARE_DISABLED:
            return Wait(job_id, view.share, WaitCode.SHARE_DISABLED, view.head.message)
        head_priority, head_submitted, head_id = view.entries[view.start]
        priority, submitted, _ = view.entries[view.start + position]
        if head_priority < priority:
            why = f"priority {-head_priority} > {-priority}"
        else:
            why = f"same priority {-priority}, submitted at {head_submitted:g} <= {submitted:g}"
        message = (
            f"{ordinal(position + 1)} in share {view.share}'s queue; "
            f"behind {head_id} ({why}), which is waiting: {view.head.code.value}"
        )
        return Wait(job_id, view.share, WaitCode.BEHIND_IN_SHARE, message)

    def __iter__(self) -> Iterator[str]:
        for view in self._views:
            for entry in view.entries[view.start :]:
                yield entry[2]

    def __len__(self) -> int:
        return sum(len(view.entries) - view.start for view in self._views)

    def heads(self) -> list[Wait]:
        return [view.head for view in self._views]

    def lengths(self) -> dict[str, int]:
        """How many jobs of each share are left waiting (its head included)."""
        return {view.share: len(view.entries) - view.start for view in self._views}


@dataclass(frozen=True)
class Decisions:
    """The outcome of one cycle.

    :param recheck_at: the earliest time a protection (``min_runtime_seconds``)
        that kept a job waiting expires; run a cycle then even if nothing else
        happens.
    """

    admit: tuple[Admission, ...] = ()
    preempt: tuple[Preemption, ...] = ()
    fail: tuple[Failure, ...] = ()
    waiting: WaitingReasons = field(default_factory=lambda: WaitingReasons([]))
    recheck_at: float | None = None
