"""One scheduling cycle: a pure function of a queue's state and the time.

The phases, in order:

1. **Snapshot** two usage views: *now* (what really runs) and *after* (once
   the preemptions in progress have completed).
2. **Nominate** the head of every share's queue. Shares dispatch strictly in
   order (priority, then submission time): a head that cannot start blocks the
   jobs behind it, so an urgent job is never overtaken by a smaller, later one.
3. **Order** the heads: first those that fit in what their share owns, now
   or (when they cannot start now) once the share's jobs they may preempt are
   gone (higher priority first, then earlier), then borrowers by submission
   time (AWS's FIFO) or, with ``idle_assignment: FAIR``, by borrowed share
   per weight.
4. For each head: **fail** it if it can no longer ever fit; **admit** it if
   both views have room; else **preempt** for it if the rules of
   :mod:`~airflow_quota_provider.core.preemption` allow; else leave it
   **waiting** with its reason. An admitted head's successor joins the order.
5. **Hold** for borrowers (FIFO, strict): when a head lacks idle capacity, the
   idle capacity of those units is held for it, and no later head may borrow
   them in this cycle. Waiting borrowers are served in order, so a large
   borrower is never starved by a stream of smaller, later ones.

A preemptor is never admitted in the cycle that chose its victims: their
capacity is still held. It waits ``PREEMPTION_IN_PROGRESS``, its place claimed
in the *after* view, and starts in the first cycle after they stopped. It
never starts earlier by borrowing more than it will once they have stopped
(the room they free is its own, not idle capacity to borrow meanwhile).
"""

from __future__ import annotations

import heapq

from airflow_quota_provider.core.admission import (
    Shortfall,
    assess,
    borrowed_by,
    check_fits_ever,
    within_own,
)
from airflow_quota_provider.core.decisions import (
    Admission,
    Decisions,
    Failure,
    Preemption,
    ShareQueueView,
    Wait,
    WaitingReasons,
)
from airflow_quota_provider.core.jobs import WaitingJob
from airflow_quota_provider.core.model import IdleAssignment, Share
from airflow_quota_provider.core.preemption import (
    Plan,
    Victim,
    describe_victim,
    describe_waiting_for,
    fits_own_after,
    in_share_candidates,
    plan_preemption,
)
from airflow_quota_provider.core.reasons import FailureCode, WaitCode, listed
from airflow_quota_provider.core.state import QueueEntry, QueueState
from airflow_quota_provider.core.usage import UsageView

_PREEMPTIBLE_SHORTFALLS = frozenset(
    {
        WaitCode.WAITING_FOR_OWN_CAPACITY,
        WaitCode.NO_IDLE_CAPACITY,
        WaitCode.BORROW_LIMIT_REACHED,
        WaitCode.QUEUE_CAPACITY_IN_USE,
        WaitCode.BORROWING_NOT_ALLOWED,
        WaitCode.BEHIND_EARLIER_BORROWER,
    }
)
_HOLDING_SHORTFALLS = frozenset({WaitCode.WAITING_FOR_OWN_CAPACITY, WaitCode.NO_IDLE_CAPACITY})

HeapKey = tuple[int, float, float, str]


def schedule(state: QueueState, now: float) -> Decisions:
    """Decide what to admit, preempt and fail in ``state`` at time ``now``."""
    return _Cycle(state, now).run()


class _Cycle:
    def __init__(self, state: QueueState, now: float) -> None:
        self.state = state
        self.config = state.config
        self.now = now
        self.now_view = UsageView(self.config, state.usage_by_share())
        self.after = self.now_view.copy()
        for job in state.terminating():
            self.after.remove(job.share, job.demand)
        self.running = self.after.copy()
        self.queues: dict[str, list[QueueEntry]] = {
            share: list(state.queue(share)) for share in state.queued_shares()
        }
        self.position = dict.fromkeys(self.queues, 0)
        self.heap: list[tuple[HeapKey, str]] = []
        self.held: dict[str, str] = {}
        self.excluded: set[str] = set()
        self.admit: list[Admission] = []
        self.preempt: list[Preemption] = []
        self.fail: list[Failure] = []
        self.views: list[ShareQueueView] = []
        self.recheck_at: float | None = None

    def run(self) -> Decisions:
        for share in sorted(self.queues):
            self._nominate(share)
        while self.heap:
            _, share_name = heapq.heappop(self.heap)
            self._process(share_name)
        return Decisions(
            admit=tuple(self.admit),
            preempt=tuple(self.preempt),
            fail=tuple(self.fail),
            waiting=WaitingReasons(self.views),
            recheck_at=self.recheck_at,
        )

    def _head(self, share_name: str) -> WaitingJob:
        job = self.state.waiting_job(self.queues[share_name][self.position[share_name]][2])
        assert job is not None
        return job

    def _nominate(self, share_name: str) -> None:
        if self.position[share_name] >= len(self.queues[share_name]):
            return
        job = self._head(share_name)
        share = self.config.share(share_name)
        heapq.heappush(self.heap, (self._rank(job, share), share_name))

    def _rank(self, job: WaitingJob, share: Share | None) -> HeapKey:
        if share is None or self._fits_own(job, share):
            return (0, -job.priority, job.submitted, job.id)
        if self.config.idle_assignment is IdleAssignment.FAIR:
            return (1, self._fair_score(share), job.submitted, job.id)
        return (1, job.submitted, -job.priority, job.id)

    def _fits_own(self, job: WaitingJob, share: Share) -> bool:
        """Whether ``job`` will run within what its share owns: it does now, or it cannot
        start now and fits once the share's jobs it may preempt are gone (a job that can
        start now by borrowing is a borrower, behind earlier ones)."""
        if within_own(self.after, share, job.demand):
            return True
        if not share.in_share_preemption:
            return False
        if assess(self.config, self.after, share, job.demand, self.held) is None:
            return False
        freed = in_share_candidates(self.state, job, share, self.excluded)
        return fits_own_after(self.after, share, job.demand, freed)

    def _fair_score(self, share: Share) -> float:
        """The share's dominant borrowed fraction of the queue, per unit of weight."""
        fractions = [
            self.after.borrowed(share, unit) / capacity
            for unit, capacity in self.config.capacity.items()
            if capacity
        ]
        return max(fractions, default=0.0) / share.weight

    def _process(self, share_name: str) -> None:
        job = self._head(share_name)
        share = self.config.share(share_name)
        if share is None:
            self._end(job, FailureCode.SHARE_REMOVED, f"share {share_name} no longer exists")
            return
        if not share.enabled:
            message = f"share {share.name} is DISABLED; its jobs wait until it is ENABLED"
            self._wait(job, WaitCode.SHARE_DISABLED, message)
            return
        refusal = check_fits_ever(self.config, share, job.demand)
        if refusal is not None:
            self._end(job, FailureCode.NO_LONGER_FITS, f"{refusal.message} (capacity lowered)")
            return
        shortfall = assess(self.config, self.after, share, job.demand, self.held)
        if shortfall is None:
            self._admit_or_await(job, share)
        else:
            self._preempt_or_wait(job, share, shortfall)

    def _admit_or_await(self, job: WaitingJob, share: Share) -> None:
        borrowed = borrowed_by(self.after, share, job.demand)
        if assess(self.config, self.now_view, share, job.demand, self.held) is None and all(
            # room the share's stopping jobs will free is not borrowed meanwhile
            extra <= borrowed[unit]
            for unit, extra in borrowed_by(self.now_view, share, job.demand).items()
        ):
            self.admit.append(Admission(job.id, share.name, borrowed))
            self.now_view.add(share.name, job.demand)
            self.after.add(share.name, job.demand)
            self.position[share.name] += 1
            self._nominate(share.name)
            return
        self.after.add(share.name, job.demand)
        message = describe_waiting_for(self.state, share, job.demand, self.excluded)
        self._wait(job, WaitCode.PREEMPTION_IN_PROGRESS, message)

    def _preempt_or_wait(self, job: WaitingJob, share: Share, shortfall: Shortfall) -> None:
        plan = Plan(None)
        if shortfall.code in _PREEMPTIBLE_SHORTFALLS:
            plan = plan_preemption(
                self.state, self.after, self.running, job, share, self.now, self.excluded, self.held
            )
        if plan.victims is not None:
            self._preempt_for(job, share, plan.victims)
            return
        message = shortfall.message
        if plan.protected_until is not None:
            message += (
                f"; borrowed jobs are protected by min_runtime_seconds "
                f"until t={plan.protected_until:g}"
            )
            if self.recheck_at is None or plan.protected_until < self.recheck_at:
                self.recheck_at = plan.protected_until
        if plan.unstoppable:
            verb = "is" if len(plan.unstoppable) == 1 else "are"
            message += (
                f"; {listed(sorted(plan.unstoppable))} would make room but {verb} not preemptible"
            )
        if shortfall.code in _HOLDING_SHORTFALLS:
            for unit, need in job.demand.items():
                if need > self.after.free_for(share, unit):
                    self.held.setdefault(unit, job.id)
        self._wait(job, shortfall.code, message)

    def _preempt_for(self, job: WaitingJob, share: Share, victims: tuple[Victim, ...]) -> None:
        for victim in victims:
            running = victim.job
            self.excluded.add(running.id)
            self.after.remove(running.share, running.demand)
            self.running.remove(running.share, running.demand)
            self.preempt.append(
                Preemption(
                    job_id=running.id,
                    share=running.share,
                    kind=victim.kind,
                    preemptor=job.id,
                    message=describe_victim(self.config, self.now_view, victim, job),
                    fails=running.retries_exhausted,
                    work_lost=running.work_at_risk(self.now),
                )
            )
        self.after.add(share.name, job.demand)
        names = ", ".join(v.job.id for v in victims)
        noun = "job" if len(victims) == 1 else "jobs"
        message = f"{share.name} preempts {len(victims)} {noun} to make room: {names}"
        self._wait(job, WaitCode.PREEMPTION_IN_PROGRESS, message)

    def _end(self, job: WaitingJob, code: FailureCode, message: str) -> None:
        self.fail.append(Failure(job.id, code, message))
        self.position[job.share] += 1
        self._nominate(job.share)

    def _wait(self, job: WaitingJob, code: WaitCode, message: str) -> None:
        start = self.position[job.share]
        head = Wait(job.id, job.share, code, message)
        self.views.append(ShareQueueView(job.share, self.queues[job.share], start, head))
