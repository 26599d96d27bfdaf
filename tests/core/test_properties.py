"""Properties of the scheduling core over random queues and job streams.

Each test drives the core directly with the small event loop below: jobs are
submitted at their time (those ``check_submission`` refuses are skipped), then
the core's settle loop runs cycles until one decides nothing more at that
instant, applying each cycle's decisions through the loop below (the same
loop the simulator and the local endpoint use). The property is
checked after EVERY cycle, against the state that cycle read (``before``) and
the state once its decisions were applied (``after``).
"""

from __future__ import annotations

import heapq
import os
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hypothesis import currently_in_test_context, example, given, settings, target
from hypothesis import strategies as st

from airflow_quota_provider.core import (
    Admission,
    Decisions,
    Failure,
    Preemption,
    PreemptionKind,
    QueueConfig,
    QueueState,
    RunningJob,
    Share,
    Wait,
    WaitCode,
    WaitingJob,
    check_submission,
    schedule,
)
from airflow_quota_provider.core.reasons import borrow_limit_text, ordinal
from airflow_quota_provider.core.settle import settle, stopped
from airflow_quota_provider.simulation.scenario import JobSpec
from tests.core.strategies import World, worlds

HUNT = os.environ.get("PROPERTY_EXAMPLES")
PROPERTY = settings(
    max_examples=int(HUNT or 60), deadline=None, database=None, derandomize=HUNT is None
)
"""60 examples a test, the same ones every run, keep the file under a minute on 2 cores
and CI stable; ``PROPERTY_EXAMPLES=2000`` hunts with fresh random examples. No example
database: with ``target`` it costs more than the runs themselves."""

_FINISH, _STOP, _SUBMIT, _RECHECK = range(4)
"""Event kinds in the order they apply at one instant (as in the simulator)."""


# --- the event loop ------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """A copy of a queue state's jobs: ``queues`` are waiting ids in dispatch order."""

    usage: dict[str, dict[str, int]]
    running: dict[str, RunningJob]
    waiting: dict[str, WaitingJob]
    queues: dict[str, list[str]]

    @classmethod
    def of(cls, state: QueueState) -> Snapshot:
        return cls(
            usage={
                share: {unit: count for unit, count in usage.items() if count}
                for share, usage in state.usage_by_share().items()
                if any(usage.values())
            },
            running={job.id: job for job in state.running()},
            waiting={job.id: job for job in state.waiting()},
            queues={s: [entry[2] for entry in state.queue(s)] for s in state.queued_shares()},
        )

    def used(self, share: str, unit: str) -> int:
        return self.usage.get(share, {}).get(unit, 0)


@dataclass(frozen=True)
class Cycle:
    """One cycle: the state it read, what it decided, the state once that was applied."""

    now: float
    config: QueueConfig
    before: Snapshot
    decisions: Decisions
    after: Snapshot

    def share(self, name: str) -> Share:
        share = self.config.share(name)
        assert share is not None
        return share

    @property
    def admitted(self) -> set[str]:
        return {a.job_id for a in self.decisions.admit}

    @property
    def failed(self) -> set[str]:
        return {f.job_id for f in self.decisions.fail}


Check = Callable[[Cycle], None]


@dataclass
class EventLoop:
    """Submits, schedules and applies decisions in virtual time; ``check`` sees every cycle."""

    world: World
    check: Check | None = None
    state: QueueState = field(init=False)
    specs: dict[str, JobSpec] = field(init=False)
    sequence: int = 0
    events: list[tuple[float, int, int, str, int]] = field(default_factory=list)
    serial: dict[str, int] = field(default_factory=dict)
    work_done: dict[str, float] = field(default_factory=dict)
    stopping: dict[str, Preemption] = field(default_factory=dict)
    pairs: list[tuple[str, str, PreemptionKind]] = field(default_factory=list)
    """(preemptor, victim, kind) of every preemption, in the order decided."""
    decided_at: dict[float, list[tuple[int, int, int]]] = field(default_factory=dict)
    """Per instant, each cycle's number of admissions, preemptions and failures."""

    def __post_init__(self) -> None:
        self.state = QueueState(self.world.config)
        self.specs = {job.id: job for job in self.world.jobs}
        for job in self.world.jobs:
            self._push(job.submit, _SUBMIT, job.id)

    def _push(self, at: float, kind: int, job_id: str = "", serial: int = 0) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, kind, self.sequence, job_id, serial))

    def run(self) -> EventLoop:
        while self.events:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, kind, _, job_id, serial = heapq.heappop(self.events)
                self._apply_event(kind, job_id, serial, now)
            self._settle(now)
        return self

    def _apply_event(self, kind: int, job_id: str, serial: int, now: float) -> None:
        if kind == _SUBMIT:
            self._submit(job_id)
            return
        current = self.serial.get(job_id) == serial and self.state.running_job(job_id)
        if kind == _FINISH and current:
            self.state.remove_running(job_id)
        elif kind == _STOP and current:
            self._stop(self.stopping.pop(job_id), now)

    def _settle(self, now: float) -> None:
        before = Snapshot.of(self.state)

        def observe(decisions: Decisions) -> None:
            nonlocal before
            after = Snapshot.of(self.state)
            if self.check is not None:
                self.check(Cycle(now, self.world.config, before, decisions, after))
            counts = (len(decisions.admit), len(decisions.preempt), len(decisions.fail))
            self.decided_at.setdefault(now, []).append(counts)
            before = after

        settled = settle(self.state, now, self, on_cycle=observe)
        recheck = settled.decisions.recheck_at
        if recheck is not None and recheck > now:
            self._push(recheck, _RECHECK)

    # the settle loop's Applier

    def admit(self, job: WaitingJob, admission: Admission, now: float) -> RunningJob:
        done = self.work_done.get(job.id, 0.0)
        self.serial[job.id] = self.serial.get(job.id, 0) + 1
        self._push(now + self.specs[job.id].duration - done, _FINISH, job.id, self.serial[job.id])
        return job.started(now, done, borrowing=any(admission.borrowed.values()))

    def preempt(self, job: RunningJob, preemption: Preemption, now: float) -> None:
        self.pairs.append((preemption.preemptor, preemption.job_id, preemption.kind))
        if self.world.preemption_delay <= 0:
            self._stop(preemption, now)
            return
        self.stopping[job.id] = preemption
        self._push(now + self.world.preemption_delay, _STOP, job.id, self.serial[job.id])

    def fail(self, job: WaitingJob, failure: Failure, now: float) -> None:
        pass

    def _submit(self, job_id: str) -> None:
        spec = self.specs[job_id]
        job = WaitingJob(
            spec.id,
            spec.share,
            spec.demand,
            spec.priority,
            spec.submit,
            preemption_retries=spec.preemption_retries,
            checkpoint_interval=spec.checkpoint_interval,
            preemptible=spec.preemptible,
        )
        if check_submission(self.world.config, job) is None:
            self.state.add_waiting(job)

    def _stop(self, preemption: Preemption, now: float) -> None:
        result = stopped(self.state, preemption.job_id, now, fails=preemption.fails)
        self.work_done[preemption.job_id] = result.work_kept


def run(world: World, check: Check | None = None) -> EventLoop:
    """Run ``world``, steering Hypothesis toward runs with many preemptions of each kind
    (without that, few random streams preempt at all)."""
    loop = EventLoop(world, check).run()
    if currently_in_test_context():
        kinds = Counter(kind for _, _, kind in loop.pairs)
        target(float(kinds[PreemptionKind.RECLAIM]), label="reclaims")
        target(float(kinds[PreemptionKind.IN_SHARE]), label="in-share preemptions")
    return loop


def total(jobs: Iterable[RunningJob | WaitingJob], share: str, unit: str) -> int:
    return sum(job.demand.get(unit, 0) for job in jobs if job.share == share)


def canonical(decisions: Decisions) -> str:
    """Everything a cycle decided, as text (``WaitingReasons`` has no value repr)."""
    waiting = list(decisions.waiting.items())
    return repr(
        (
            decisions.admit,
            decisions.preempt,
            decisions.fail,
            waiting,
            decisions.waiting.heads(),
            decisions.recheck_at,
        )
    )


# --- 1. capacity ---------------------------------------------------------------------------


@PROPERTY
@given(worlds())
def test_capacity_is_never_over_allocated(world: World) -> None:
    def check(cycle: Cycle) -> None:
        for unit, capacity in cycle.config.capacity.items():
            held = sum(job.demand.get(unit, 0) for job in cycle.after.running.values())
            assert held <= capacity, f"t={cycle.now:g}: {held} {unit} held, queue has {capacity}"

    run(world, check)


# --- 2. share limits -----------------------------------------------------------------------


@PROPERTY
@given(worlds())
def test_no_admission_takes_a_share_beyond_its_limit(world: World) -> None:
    def check(cycle: Cycle) -> None:
        for admission in cycle.decisions.admit:
            job = cycle.before.waiting[admission.job_id]
            assert admission.share == job.share
            share = cycle.share(job.share)
            for unit, need in job.demand.items():
                held = cycle.after.used(share.name, unit)
                limit = cycle.config.share_limit(share, unit)
                assert held <= limit, f"{job.id} took {share.name} to {held} {unit} of {limit}"
                assert 0 <= admission.borrowed.get(unit, 0) <= need

    run(world, check)


STOPPING_VICTIM_HOLDS_ROOM = World(
    config=QueueConfig(
        "q",
        {"gpu": 8},
        (Share("a", {"gpu": 4}, in_share_preemption=True), Share("b", {"gpu": 4})),
    ),
    jobs=(
        JobSpec("a-low", "a", {"gpu": 4}, duration=36_000, submit=0, priority=1),
        JobSpec("b-big", "b", {"gpu": 8}, duration=600, submit=0),
        JobSpec("a-urgent", "a", {"gpu": 4}, duration=600, submit=10, priority=99),
    ),
    preemption_delay=30.0,
)
"""a-urgent preempts a-low; while a-low stops, b's idle gpus (held for b-big) must not be
lent to a-urgent in the meantime."""


@PROPERTY
@given(worlds())
@example(STOPPING_VICTIM_HOLDS_ROOM)
def test_an_admitted_job_borrows_no_more_than_its_admission_says(world: World) -> None:
    """Counting the jobs that really hold capacity (stopping victims too), a job never
    starts borrowing more than its admission says: a preemptor whose room is still held
    by its stopping victims waits for them rather than borrow meanwhile."""

    def check(cycle: Cycle) -> None:
        used = {s: dict(u) for s, u in cycle.before.usage.items()}
        for admission in cycle.decisions.admit:
            job = cycle.before.waiting[admission.job_id]
            share = cycle.share(job.share)
            held = used.setdefault(share.name, {})
            for unit, need in job.demand.items():
                before = held.get(unit, 0)
                owned = share.owns(unit)
                borrows = max(0, before + need - owned) - max(0, before - owned)
                assert borrows <= admission.borrowed.get(unit, 0), (
                    f"t={cycle.now:g}: {job.id} borrows {borrows} {unit}, "
                    f"its admission says {admission.borrowed}"
                )
                held[unit] = before + need

    run(world, check)


# --- 3. reclaim ----------------------------------------------------------------------------


def check_reclaim_victims(cycle: Cycle) -> None:
    """Each reclaim victim's share was above what it owns on a unit the victim holds,
    counting the jobs running before the cycle minus the preemptor's earlier victims."""
    earlier: dict[str, list[RunningJob]] = {}
    for preemption in cycle.decisions.preempt:
        if preemption.kind is PreemptionKind.IN_SHARE:
            continue
        victim = cycle.before.running[preemption.job_id]
        preemptor = cycle.before.waiting[preemption.preemptor]
        # No capacity is ever lowered here, so no share is above its limit.
        assert preemption.kind is PreemptionKind.RECLAIM, preemption
        assert victim.share != preemptor.share, preemption
        taken = earlier.setdefault(preemptor.id, [])
        owner = cycle.share(victim.share)
        usage = {
            unit: cycle.before.used(victim.share, unit) - total(taken, victim.share, unit)
            for unit in victim.demand
        }
        owns = {unit: owner.owns(unit) for unit in victim.demand}
        assert any(usage[u] > owns[u] for u in victim.demand), (
            f"t={cycle.now:g}: {preemptor.id} of {preemptor.share} reclaimed {victim.id} "
            f"({dict(victim.demand)}) though {victim.share} uses {usage} and owns {owns}"
        )
        taken.append(victim)


@PROPERTY
@given(worlds())
def test_reclaim_never_takes_a_job_whose_share_is_within_its_capacity(world: World) -> None:
    run(world, check_reclaim_victims)


SAME_CYCLE_BORROWER = World(
    QueueConfig(
        job_queue="q",
        capacity={"gpu": 4, "tpu": 4},
        shares=(Share("x", {"tpu": 2}), Share("y", {"gpu": 4, "tpu": 2})),
    ),
    (
        JobSpec("y0", "y", {"tpu": 2}, duration=100, submit=0),
        JobSpec("y1", "y", {"tpu": 1}, duration=100, submit=5, priority=1),
        JobSpec("x1", "x", {"gpu": 1}, duration=100, submit=5),
        JobSpec("x2", "x", {"tpu": 2}, duration=100, submit=5),
    ),
)
"""Both shares LEND_AND_BORROW. At t=5, y runs y0 within what it owns (2 of 2 tpu).
In one cycle y1 is admitted borrowing x's idle tpu and x1 borrowing y's idle gpu; then
x2, behind x1 and within what x owns, needs x's tpu back. y holds 3 tpu only counting
y1, which has not started: y0 must not be the victim (the core used to take it)."""


def test_reclaim_does_not_count_borrowers_admitted_in_the_same_cycle() -> None:
    run(SAME_CYCLE_BORROWER, check_reclaim_victims)


@PROPERTY
@given(worlds())
def test_a_job_that_is_not_preemptible_is_never_preempted(world: World) -> None:
    def check(cycle: Cycle) -> None:
        for preemption in cycle.decisions.preempt:
            assert cycle.before.running[preemption.job_id].preemptible, preemption

    run(world, check)


# --- 4. in-share preemption ----------------------------------------------------------------


@PROPERTY
@given(worlds())
def test_in_share_preemption_only_takes_lower_priority_jobs_where_enabled(world: World) -> None:
    def check(cycle: Cycle) -> None:
        for preemption in cycle.decisions.preempt:
            if preemption.kind is not PreemptionKind.IN_SHARE:
                continue
            victim = cycle.before.running[preemption.job_id]
            preemptor = cycle.before.waiting[preemption.preemptor]
            assert victim.share == preemptor.share == preemption.share
            assert victim.priority < preemptor.priority, preemption
            assert cycle.share(victim.share).in_share_preemption, preemption

    run(world, check)


# --- 5. a share's guarantee ----------------------------------------------------------------

ALWAYS_EXCUSED = {
    WaitCode.PREEMPTION_IN_PROGRESS,
    WaitCode.BEHIND_IN_SHARE,
    WaitCode.SHARE_DISABLED,
}


def fits_own_after_preemption(snapshot: Snapshot, share: Share, job: WaitingJob) -> bool:
    """Whether ``job`` fits what its share owns once every job it may preempt is gone:
    other shares' jobs hold none of what the share uses, and with in-share preemption
    its share's strictly lower-priority jobs (not already stopping) go."""
    victims = [
        running
        for running in snapshot.running.values()
        if share.in_share_preemption
        and running.share == share.name
        and running.priority < job.priority
        and not running.terminating
    ]
    return all(
        snapshot.used(share.name, u) - total(victims, share.name, u) + n <= share.owns(u)
        for u, n in job.demand.items()
    )


RECLAIM_AND_IN_SHARE = World(
    config=QueueConfig(
        "q",
        {"gpu": 8},
        (Share("a", {"gpu": 8}, in_share_preemption=True), Share("b", {})),
    ),
    jobs=(
        JobSpec("a-low", "a", {"gpu": 2}, duration=36_000, submit=0, priority=1),
        JobSpec("b-borrow", "b", {"gpu": 6}, duration=36_000, submit=0),
        JobSpec("a-urgent", "a", {"gpu": 8}, duration=600, submit=10, priority=9999),
    ),
)
"""The urgent job must reclaim b's borrowed gpus and preempt a's own low job together."""


@PROPERTY
@given(worlds())
@example(RECLAIM_AND_IN_SHARE)
def test_a_head_its_share_guarantee_covers_never_waits_for_a_job_to_finish(world: World) -> None:
    """A head that fits what its share owns, once the jobs it may preempt (lent capacity,
    lower-priority jobs of its share) are gone, starts or preempts: it never waits for a
    running job to finish, unless that job is protected by ``min_runtime_seconds`` or not
    preemptible."""

    def check(cycle: Cycle) -> None:
        for share_name, queue in cycle.before.queues.items():
            head = cycle.before.waiting[queue[0]]
            share = cycle.share(share_name)
            if head.id in cycle.admitted or not fits_own_after_preemption(
                cycle.before, share, head
            ):
                continue
            wait = cycle.decisions.waiting.get(head.id)
            assert wait is not None, f"{head.id} fits what {share_name} owns but failed"
            if wait.code in ALWAYS_EXCUSED:
                continue
            protected = "protected by min_runtime_seconds" in wait.message
            protected |= "not preemptible" in wait.message
            assert wait.code is WaitCode.WAITING_FOR_OWN_CAPACITY and protected, (
                f"t={cycle.now:g}: {head.id} ({dict(head.demand)}) fits what {share_name} owns "
                f"(uses {cycle.before.usage.get(share_name, {})}) but waits: {wait}"
            )

    run(world, check)


# --- 6. determinism ------------------------------------------------------------------------


def added_in_order(config: QueueConfig, jobs: list[RunningJob | WaitingJob]) -> QueueState:
    state = QueueState(config)
    for job in jobs:
        if isinstance(job, RunningJob):
            state.add_running(job)
        else:
            state.add_waiting(job)
    return state


@PROPERTY
@given(worlds(), st.randoms(use_true_random=False))
def test_decisions_are_deterministic_whatever_order_jobs_were_added(
    world: World, rng: random.Random
) -> None:
    def check(cycle: Cycle) -> None:
        want = canonical(cycle.decisions)
        running = list(cycle.before.running.values())
        waiting = list(cycle.before.waiting.values())
        rng.shuffle(running)
        rng.shuffle(waiting)
        mixed: list[RunningJob | WaitingJob] = [*running, *waiting]
        rng.shuffle(mixed)
        for state in (
            QueueState.from_jobs(cycle.config, running, waiting),
            added_in_order(cycle.config, mixed),
        ):
            assert Snapshot.of(state) == cycle.before
            assert canonical(schedule(state, cycle.now)) == want
            assert canonical(schedule(state, cycle.now)) == want
            assert Snapshot.of(state) == cycle.before, "schedule changed the state it read"

    run(world, check)


# --- 7. no thrash --------------------------------------------------------------------------


@PROPERTY
@given(worlds(delays=(0.0,)))
def test_preemptions_settle_without_thrash(world: World) -> None:
    """With victims stopping at once, the cycles at one instant end, within a bound,
    with a cycle that decides nothing; and no two jobs ever preempt each other in turn."""
    loop = run(world)
    worst = max(loop.decided_at.items(), key=lambda item: len(item[1]), default=(0.0, []))
    target(float(len(worst[1])), label="cycles at one instant")
    bound = len(world.jobs) + 2
    assert len(worst[1]) <= bound, f"t={worst[0]:g}, (admit, preempt, fail) per cycle: {worst[1]}"
    pairs = {(preemptor, victim) for preemptor, victim, _ in loop.pairs}
    back_and_forth = sorted((a, b) for a, b in pairs if (b, a) in pairs and a < b)
    assert not back_and_forth, f"preempted each other: {back_and_forth}; all: {loop.pairs}"


# --- 8. every waiting job has a reason -----------------------------------------------------


def check_bookkeeping(cycle: Cycle) -> None:
    """Every decision is about a job in the state it belongs to, once."""
    decisions = cycle.decisions
    admitted = [a.job_id for a in decisions.admit]
    victims = [p.job_id for p in decisions.preempt]
    assert len(set(admitted)) == len(admitted)
    assert len(set(victims)) == len(victims)
    assert not decisions.fail, "nothing changed the config, so every accepted job can run"
    for preemption in decisions.preempt:
        victim = cycle.before.running[preemption.job_id]
        assert not victim.terminating, f"{victim.id} is preempted twice"
        assert preemption.share == victim.share
        assert preemption.fails == victim.retries_exhausted
        assert preemption.work_lost == victim.work_at_risk(cycle.now)
        wait = decisions.waiting.get(preemption.preemptor)
        assert wait is not None and wait.code is WaitCode.PREEMPTION_IN_PROGRESS, (
            "a preemptor waits for its victims to stop"
        )


@PROPERTY
@given(worlds())
def test_every_waiting_job_has_a_reason(world: World) -> None:
    def check(cycle: Cycle) -> None:
        check_bookkeeping(cycle)
        decisions = cycle.decisions
        left = set(cycle.before.waiting) - cycle.admitted - cycle.failed
        listed = list(decisions.waiting)
        assert len(listed) == len(set(listed)) == len(decisions.waiting)
        assert set(listed) == left
        for job_id in listed:
            wait = decisions.waiting[job_id]
            assert wait.job_id == job_id
            assert wait.share == cycle.before.waiting[job_id].share
            assert isinstance(wait.code, WaitCode)
            assert wait.message

    run(world, check)


@PROPERTY
@given(worlds())
def test_each_share_dispatches_its_queue_strictly_in_order(world: World) -> None:
    def check(cycle: Cycle) -> None:
        heads = {wait.share: wait for wait in cycle.decisions.waiting.heads()}
        assert len(heads) == len(cycle.decisions.waiting.heads()), "one head per share"
        dispatched = cycle.admitted | cycle.failed
        for share, queue in cycle.before.queues.items():
            done = [job_id for job_id in queue if job_id in dispatched]
            assert queue[: len(done)] == done, f"{share} dispatched {done} out of {queue}"
            rest = queue[len(done) :]
            if not rest:
                assert share not in heads
                continue
            assert heads[share].job_id == rest[0]
            codes = {cycle.decisions.waiting[job_id].code for job_id in rest[1:]}
            assert codes <= {WaitCode.BEHIND_IN_SHARE}

    run(world, check)


# --- 9. messages with the numbers ----------------------------------------------------------

CAPACITY_CODES = {
    WaitCode.BORROWING_NOT_ALLOWED,
    WaitCode.BORROW_LIMIT_REACHED,
    WaitCode.QUEUE_CAPACITY_IN_USE,
    WaitCode.WAITING_FOR_OWN_CAPACITY,
    WaitCode.NO_IDLE_CAPACITY,
}
_NEEDS = re.compile(
    r"(?P<share>[\w-]+) needs (?P<need>\d+) (?P<unit>\w+)"
    r"(?: within what it owns \(|; it )uses (?P<used>\d+) of (?P<owned>\d+)"
)
_HELD = re.compile(
    r"(?P<share>[\w-]+) needs to borrow (?P<extra>\d+) (?P<unit>\w+); idle (?P=unit) is held "
    r"for (?P<holder>\S+), which borrows first \((?P<rule>\w+)\)"
)
_PROTECTED = re.compile(r"; borrowed jobs are protected by min_runtime_seconds until t=(\S+)$")
_RECLAIMED = re.compile(
    r"share (?P<share>[\w-]+) borrows (?P<borrowed>\d+) (?P<unit>\w+) \(uses (?P<used>\d+), "
    r"owns (?P<owned>\d+)\); share (?P<by_share>[\w-]+) reclaims it for job (?P<by>\S+), "
    r"which needs (?P<wanted>.+) within what its share owns"
)


def use_when_processed(cycle: Cycle, share: str, unit: str) -> int | None:
    """What ``share`` held of ``unit`` in the cycle's *after* view when its head was
    assessed, if known: no other share took its jobs in this cycle."""
    if any(p.share == share for p in cycle.decisions.preempt):
        return None
    before = cycle.before
    stopping = [job for job in before.running.values() if job.terminating]
    admitted = [before.waiting[job_id] for job_id in cycle.admitted]
    return before.used(share, unit) - total(stopping, share, unit) + total(admitted, share, unit)


def check_capacity_message(cycle: Cycle, wait: Wait) -> None:
    job = cycle.before.waiting[wait.job_id]
    share = cycle.share(job.share)
    match = _NEEDS.match(wait.message)
    assert match, wait
    unit, need = match["unit"], int(match["need"])
    used, owned = int(match["used"]), int(match["owned"])
    assert match["share"] == share.name
    assert need == job.demand.get(unit), f"{job.id} needs {dict(job.demand)}: {wait.message}"
    assert owned == share.owns(unit), wait
    expected = use_when_processed(cycle, share.name, unit)
    assert expected is None or used == expected, f"{wait}; {share.name} held {expected}"
    limit = cycle.config.share_limit(share, unit)
    more = max(0, limit - max(used, owned))
    if wait.code is WaitCode.BORROWING_NOT_ALLOWED:
        assert used + need > limit
        assert f"its sharing strategy {share.sharing.value} does not borrow" in wait.message
    elif wait.code is WaitCode.BORROW_LIMIT_REACHED:
        # a finite borrow limit, within what the queue has, stops it
        assert used + need > limit == share.borrow_cap(unit), wait
        terms = f"may borrow {more} more ({borrow_limit_text(share.borrow_limit)})"
        assert wait.message.endswith(f" and {terms}"), wait
    elif wait.code is WaitCode.QUEUE_CAPACITY_IN_USE:
        # the queue, not a borrow limit, stops it
        capacity = cycle.config.capacity[unit]
        cap = share.borrow_cap(unit)
        assert used + need > capacity == limit and (cap is None or cap > capacity), wait
        assert f", but {cycle.config.title} has {capacity} {unit} in all, " in wait.message
    elif wait.code is WaitCode.WAITING_FOR_OWN_CAPACITY:
        # within what it owns now, or once its own jobs leave room (it may not reclaim)
        assert used + need <= owned or (need <= owned and used < owned), wait
    else:
        limited = f"may borrow {more} more (borrow_limit {share.borrow_limit}%)"
        may = "may borrow without limit (borrow_limit -1)" if share.borrow_limit < 0 else limited
        assert may in wait.message, wait
        short = re.search(r"\((\d+) more needed\)", wait.message)
        assert short and 1 <= int(short[1]) <= need, wait


def check_held_message(cycle: Cycle, wait: Wait) -> None:
    job = cycle.before.waiting[wait.job_id]
    share = cycle.share(job.share)
    match = _HELD.match(wait.message)
    assert match, wait
    unit, extra, holder = match["unit"], int(match["extra"]), match["holder"]
    assert match["share"] == share.name
    assert match["rule"] == cycle.config.idle_assignment.value
    assert 1 <= extra <= job.demand[unit], wait
    used = use_when_processed(cycle, share.name, unit)
    if used is not None:
        owned = share.owns(unit)
        assert extra == max(0, used + job.demand[unit] - owned) - max(0, used - owned), wait
    holding = cycle.decisions.waiting.get(holder)
    assert holding is not None and holding.code in {
        WaitCode.NO_IDLE_CAPACITY,
        WaitCode.WAITING_FOR_OWN_CAPACITY,
    }, f"{wait.message}; but {holder} waits: {holding}"
    assert unit in cycle.before.waiting[holder].demand


def check_preemption_in_progress_message(cycle: Cycle, wait: Wait) -> None:
    job = cycle.before.waiting[wait.job_id]
    victims = [p.job_id for p in cycle.decisions.preempt if p.preemptor == job.id]
    if victims:
        noun = "job" if len(victims) == 1 else "jobs"
        want = f"{job.share} preempts {len(victims)} {noun} to make room: {', '.join(victims)}"
        assert wait.message == want
        return
    # Heads are listed in the order the cycle processed them: the victims chosen so
    # far are those of the preemptors before this job.
    heads = [head.job_id for head in cycle.decisions.waiting.heads()]
    earlier = set(heads[: heads.index(job.id)])
    chosen = {p.job_id for p in cycle.decisions.preempt if p.preemptor in earlier}
    stopping = sorted(
        other.id
        for other in cycle.before.running.values()
        if (other.terminating or other.id in chosen) and set(other.demand) & set(job.demand)
    )
    assert stopping, f"{job.id} waits for preemptions though none is in progress: {wait}"
    shown = ", ".join(stopping[:5]) + (f" and {len(stopping) - 5} more" if stopping[5:] else "")
    assert wait.message == f"{job.share} waits for preempted jobs to stop: {shown}"


def check_behind_messages(cycle: Cycle) -> None:
    waiting = cycle.decisions.waiting
    for share, queue in cycle.before.queues.items():
        rest = [job_id for job_id in queue if job_id in waiting]
        if not rest:
            continue
        head = cycle.before.waiting[rest[0]]
        for position, job_id in enumerate(rest[1:], start=2):
            job = cycle.before.waiting[job_id]
            if head.priority > job.priority:
                why = f"priority {head.priority} > {job.priority}"
            else:
                why = f"same priority {job.priority}, submitted at {head.submitted:g} <= "
                why += f"{job.submitted:g}"
            assert waiting[job_id].message == (
                f"{ordinal(position)} in share {share}'s queue; behind {head.id} ({why}), "
                f"which is waiting: {waiting[head.id].code.value}"
            )


def check_preemption_message(cycle: Cycle, preemption: Preemption) -> None:
    victim = cycle.before.running[preemption.job_id]
    preemptor = cycle.before.waiting[preemption.preemptor]
    wanted = ", ".join(f"{n} {u}" for u, n in sorted(preemptor.demand.items()))
    if preemption.kind is PreemptionKind.IN_SHARE:
        assert preemption.message == (
            f"job {preemptor.id} (priority {preemptor.priority}) of share {victim.share} needs "
            f"{wanted}; this job has priority {victim.priority} (in-share preemption)"
        )
        return
    match = _RECLAIMED.fullmatch(preemption.message)
    assert match, preemption
    unit, used, owned = match["unit"], int(match["used"]), int(match["owned"])
    assert (match["share"], match["by_share"], match["by"], match["wanted"]) == (
        victim.share,
        preemptor.share,
        preemptor.id,
        wanted,
    )
    assert unit in victim.demand
    assert owned == cycle.share(victim.share).owns(unit)
    assert int(match["borrowed"]) == used - owned >= 1
    admitted = [cycle.before.waiting[job_id] for job_id in cycle.admitted]
    low = cycle.before.used(victim.share, unit)
    assert low <= used <= low + total(admitted, victim.share, unit), preemption


def check_protection(cycle: Cycle, wait: Wait) -> None:
    match = _PROTECTED.search(wait.message)
    if match is None:
        return
    until = float(match[1])
    assert until > cycle.now
    assert cycle.decisions.recheck_at is not None and cycle.decisions.recheck_at <= until


@PROPERTY
@given(worlds())
def test_reason_messages_carry_the_numbers(world: World) -> None:
    def check(cycle: Cycle) -> None:
        for wait in cycle.decisions.waiting.heads():
            check_protection(cycle, wait)
            if wait.code in CAPACITY_CODES:
                check_capacity_message(cycle, wait)
            elif wait.code is WaitCode.BEHIND_EARLIER_BORROWER:
                check_held_message(cycle, wait)
            elif wait.code is WaitCode.PREEMPTION_IN_PROGRESS:
                check_preemption_in_progress_message(cycle, wait)
        check_behind_messages(cycle)
        for preemption in cycle.decisions.preempt:
            check_preemption_message(cycle, preemption)

    run(world, check)
