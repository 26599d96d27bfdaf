"""The pool manager's decision step: what Airflow shows now -> pool slots, clears, reasons.

A pure function of the task instances of the managed pools and the time: it builds
the core's queue state from them (Airflow is the source of truth; nothing but
preemption counts is remembered between cycles) and settles it with the core's
settle loop. The manager keeps that state between cycles instead and takes
Airflow's changes (:mod:`~airflow_quota_provider.airflow_pools.standing`); both make
the same jobs, with the functions here, and settle them with
:func:`settled_plan`:

- a **scheduled** task is a waiting job of the pool's share, in the order in
  which Airflow's scheduler hands out a pool's slots: ``priority_weight``
  (higher first), then its run's logical date, then its key;
- a **queued, running or deferred** task is a running job; it borrows if, in
  its share, the tasks that started before it already used what the share
  owns;
- a **restarting** task (cleared, its process maybe still alive) is a running
  job being stopped: its capacity is not handed out until it is gone;
- a task that could never fit what its share may hold is failed at once, with
  a note saying what the share can hold (Airflow would leave it scheduled
  forever).

Out come the slots of every managed pool (0, shut, unless the cycle admits into
it: then the tasks Airflow counts plus those admitted, so its open slots are
exactly what the core admitted, a large head is not overtaken by smaller tasks
behind it, and a holder that ends between two cycles frees nothing Airflow could
hand out; see :func:`gated_slots`), the tasks to clear (preemption) or fail, and a
reason with the numbers for every task left waiting.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import (
    Admission,
    Failure,
    Preemption,
    PreemptionKind,
    QueueState,
    RunningJob,
    Wait,
    WaitingJob,
    WaitingReasons,
    settle,
)
from airflow_quota_provider.core.admission import borrowing_terms, check_fits_ever
from airflow_quota_provider.core.model import QueueConfig, Share
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.core.usage import borrowers

NOTE_LIMIT = 1000
"""Airflow keeps at most this many characters of a task instance's note."""


@dataclass(frozen=True, slots=True)
class Start:
    """A scheduled task the share may start now; its pool opens ``slots`` for it."""

    key: TaskKey
    pool: str
    slots: int
    borrowed: int


@dataclass(frozen=True, slots=True)
class Stop:
    """Clear a task to make room for ``preemptor`` (or fail it: its preemptions are used up).

    :param note: the task instance note that says who preempted it and why.
    """

    key: TaskKey
    pool: str
    kind: PreemptionKind
    preemptor: TaskKey
    fails: bool
    note: str
    slots: int
    started: float | None = None
    """When the victim's current try started, if Airflow says."""
    try_number: int = 0
    """The victim's try that is stopped (its external work, if any, is named after it)."""
    preemptor_pool: str | None = None
    """The preemptor's pool: its share is the one the preemption is for."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Fail a scheduled task at once: it could never fit; ``note`` says what its share can hold."""

    key: TaskKey
    pool: str
    note: str


@dataclass(frozen=True)
class PoolPlan:
    """What one cycle of the pool manager does.

    :param slots: every managed pool's slots from now on.
    :param waiting: why each task left waiting waits, in dispatch order per share.
    :param recheck_at: when a protection that kept a task waiting expires.
    """

    slots: Mapping[str, int]
    start: tuple[Start, ...] = ()
    stop: tuple[Stop, ...] = ()
    refuse: tuple[Refusal, ...] = ()
    waiting: TaskReasons = field(default_factory=lambda: TaskReasons(WaitingReasons([]), {}))
    recheck_at: float | None = None


def decide(
    fleet: Fleet,
    tasks: Iterable[PoolTask],
    now: float,
    preemptions: Mapping[TaskKey, int] | None = None,
) -> PoolPlan:
    """Decide one cycle for the task instances of ``fleet``'s pools at time ``now``.

    :param preemptions: how often each task has been preempted so far (Airflow does not
        keep it; the manager's database does). How many preemptions a task survives is
        its own ``preemption_retries`` or its share's.
    """
    preemptions = preemptions or {}
    by_id: dict[str, PoolTask] = {}
    holders: list[PoolTask] = []
    waiting: list[tuple[str, PoolTask]] = []
    refused: list[Refusal] = []
    fits: dict[tuple[str, int], bool] = {}
    pools = fleet.shares
    for task in tasks:
        if task.pool not in pools:
            continue
        job_id = str(task.key)
        by_id[job_id] = task
        task_state = task.state
        if task_state is TaskState.SCHEDULED:
            if task.problem is None and fits.get((task.pool, task.slots)):
                waiting.append((job_id, task))  # the usual case, without a call
                continue
            refusal = refusal_of(fleet, task, fits)
            if refusal is None:
                waiting.append((job_id, task))
            else:
                refused.append(refusal)
        elif task_state.holds:
            holders.append(task)
    state = QueueState.from_jobs(
        fleet.config,
        running_jobs(fleet, holders, now, preemptions),
        _waiting(fleet, waiting, preemptions),
    )
    return settled_plan(fleet, state, by_id, holders, refused, now)


def settled_plan(
    fleet: Fleet,
    state: QueueState,
    tasks: Mapping[str, PoolTask],
    holders: Iterable[PoolTask],
    refused: Iterable[Refusal],
    now: float,
) -> PoolPlan:
    """Settle ``state`` (the tasks' jobs; it is changed) at ``now`` into the cycle's plan.

    :param tasks: the tasks of the managed pools by job id (kept by the plan's reasons).
    :param holders: the tasks that hold capacity (their jobs are running in ``state``).
    :param refused: the scheduled tasks that could never fit (not in ``state``).
    """
    applier = _Recorder(tasks)
    settled = settle(state, now, applier)
    return PoolPlan(
        slots=gated_slots(fleet, holders, applier.starts, applier.stops),
        start=tuple(applier.starts),
        stop=tuple(applier.stops),
        refuse=tuple(refused),
        waiting=TaskReasons(settled.decisions.waiting, tasks),
        recheck_at=settled.decisions.recheck_at,
    )


def gated_slots(
    fleet: Fleet, holders: Iterable[PoolTask], starts: Iterable[Start], stops: Iterable[Stop]
) -> dict[str, int]:
    """Every managed pool's slots: shut (0) unless the cycle admits tasks into it, then
    what Airflow counts in it (queued, running, deferred; victims left out) plus what is
    admitted, so its open slots are exactly the admitted tasks'.

    Shut below what its tasks hold, a pool's open slots stay at or below 0 when a holder
    ends between two cycles: Airflow cannot hand the freed slots to a task the manager
    did not choose (a smaller one behind the share's head, say). The freed capacity is
    admitted at the next cycle instead."""
    slots = dict.fromkeys(fleet.shares, 0)
    opened: dict[str, int] = {}
    for start in starts:
        opened[start.pool] = opened.get(start.pool, 0) + start.slots
    stopped = {stop.key for stop in stops}
    for task in holders:
        if task.pool in opened and task.state.counted and task.key not in stopped:
            slots[task.pool] += task.slots
    for pool, admitted in opened.items():
        slots[pool] += admitted
    return slots


class TaskReasons(Mapping[TaskKey, Wait]):
    """Why each task waits, by task key, in dispatch order per share; messages are made
    when read (a cycle over 10,000 waiting tasks does not format 10,000 of them)."""

    def __init__(self, reasons: WaitingReasons, tasks: Mapping[str, PoolTask]) -> None:
        self._reasons = reasons
        self._tasks = tasks

    def __getitem__(self, key: TaskKey) -> Wait:
        return self._reasons[str(key)]

    def __iter__(self) -> Iterator[TaskKey]:
        return (self._tasks[job_id].key for job_id in self._reasons)

    def __len__(self) -> int:
        return len(self._reasons)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, TaskKey) and str(key) in self._reasons

    def heads(self) -> list[ShareHead]:
        """The first waiting task of each share with its reason: every task behind it waits
        for it (``BEHIND_IN_SHARE``)."""
        lengths = self._reasons.lengths()
        return [
            ShareHead(self._tasks[head.job_id].key, head, lengths[head.share])
            for head in self._reasons.heads()
        ]


@dataclass(frozen=True)
class ShareHead:
    """A share's first waiting task, why it waits, and how many of the share's tasks wait
    (it included)."""

    key: TaskKey
    wait: Wait
    waiting: int


def refusal_of(fleet: Fleet, task: PoolTask, fits: dict[tuple[str, int], bool]) -> Refusal | None:
    """Why a scheduled task can never run as it is (``fits`` caches the check per size)."""
    if task.problem is not None:
        note = f"Failed by the quota pool manager: {task.problem}"
        return Refusal(task.key, task.pool, note[:NOTE_LIMIT])
    size = (task.pool, task.slots)
    if size not in fits:
        fits[size] = _never_fits(fleet, task) is None
    return None if fits[size] else _never_fits(fleet, task)


def _never_fits(fleet: Fleet, task: PoolTask) -> Refusal | None:
    share_name, unit = fleet.shares[task.pool]
    share = fleet.config.share(share_name)
    assert share is not None
    refusal = check_fits_ever(fleet.config, share, {unit: task.slots})
    if refusal is None:
        return None
    note = (
        f"Failed by the quota pool manager: pool_slots={task.slots} in pool {task.pool} can "
        f"never run: {refusal.message}. {_what_is_possible(fleet.config, share, unit, task.slots)}"
    )
    return Refusal(task.key, task.pool, note[:NOTE_LIMIT])


def _what_is_possible(config: QueueConfig, share: Share, unit: str, slots: int) -> str:
    """What share ``share`` can ever hold of ``unit``, and what would let a task that asks
    for ``slots`` of it run: fewer slots, a share that may hold more (only while the fleet
    has more), or a larger fleet."""
    most = config.share_limit(share, unit)
    fleet_has = config.capacity.get(unit, 0)
    lower = f"lower pool_slots to {most} or less" if most else ""
    if slots > fleet_has:
        holds = (
            f"share {share.name} may hold at most {most} {unit} of it "
            f"(owns {share.owns(unit)}, {borrowing_terms(share)})"
        )
        return f"The fleet itself is too small: {holds}" + (f"; {lower}." if lower else ".")
    grow = "borrow_limit" if share.sharing.borrows else "let it borrow (LEND_AND_BORROW)"
    grow = f"raise share {share.name}'s capacity or {grow}"
    has = f"The fleet has {fleet_has} {unit} in all"
    return f"{has}: {lower}, or {grow}." if lower else f"{has}: {grow}."


def running_jobs(
    fleet: Fleet, holders: list[PoolTask], now: float, preemptions: Mapping[TaskKey, int]
) -> list[RunningJob]:
    """The holders as running jobs; per share, in start order, those beyond what the share
    owns borrow (Airflow keeps no record of it, and a restarted manager must agree)."""
    in_order = sorted(holders, key=lambda t: (now if t.start_date is None else t.start_date, t.key))
    shares = fleet.shares
    borrowing = borrowers(
        fleet.config,
        ((str(t.key), shares[t.pool][0], {shares[t.pool][1]: t.slots}) for t in in_order),
    )
    jobs = []
    for task in in_order:
        share_name, unit = shares[task.pool]
        share = fleet.config.share(share_name)
        assert share is not None
        jobs.append(
            RunningJob(
                str(task.key),
                share_name,
                {unit: task.slots},
                task.priority_weight,
                task.start_date if task.start_date is not None else now,
                submitted=task.run_date,
                preemptions=preemptions.get(task.key, 0),
                preemption_retries=_retries(share, task),
                terminating=task.state is TaskState.RESTARTING,
                borrowing=str(task.key) in borrowing,
                preemptible=share.preemptible if task.preemptible is None else task.preemptible,
                min_runtime_seconds=task.min_runtime_seconds,
            )
        )
    return jobs


def waiting_jobs(
    fleet: Fleet, scheduled: Iterable[PoolTask], preemptions: Mapping[TaskKey, int]
) -> list[WaitingJob]:
    """Scheduled tasks as the core's waiting jobs, as :func:`decide` makes them."""
    return list(_waiting(fleet, [(str(t.key), t) for t in scheduled], preemptions))


def _waiting(
    fleet: Fleet, waiting: list[tuple[str, PoolTask]], preemptions: Mapping[TaskKey, int]
) -> Iterator[WaitingJob]:
    # the hot path of a cycle (every scheduled task, every cycle): what each pool's tasks
    # share is looked up once, and equal demands are one mapping (the core only reads them)
    shares = {s.name: s for s in fleet.config.shares}
    per_pool = {
        pool: (name, unit, shares[name].preemption_retries, shares[name].preemptible)
        for pool, (name, unit) in fleet.shares.items()
    }
    demands: dict[tuple[str, int], dict[str, int]] = {}
    for job_id, task in waiting:
        share_name, unit, cap, preemptible = per_pool[task.pool]
        demand = demands.get((unit, task.slots))
        if demand is None:
            demand = demands[(unit, task.slots)] = {unit: task.slots}
        own = task.preemption_retries
        yield WaitingJob(
            job_id,
            share_name,
            demand,
            task.priority_weight,
            task.run_date,
            # a task preempted before is rare: most cycles look up none
            preemptions.get(task.key, 0) if preemptions else 0,
            cap if own is None else own,
            None,
            preemptible if task.preemptible is None else task.preemptible,
            task.min_runtime_seconds,
        )


def _retries(share: Share | None, task: PoolTask) -> int | None:
    """Preemptions the task survives: its own cap, else its share's (``None``: no cap)."""
    if task.preemption_retries is not None:
        return task.preemption_retries
    return None if share is None else share.preemption_retries


class _Recorder:
    """The settle loop's Applier: records the decisions; the manager applies them."""

    def __init__(self, tasks: Mapping[str, PoolTask]) -> None:
        self.tasks = tasks
        self.starts: list[Start] = []
        self.stops: list[Stop] = []

    def admit(self, job: WaitingJob, admission: Admission, now: float) -> RunningJob:
        task = self.tasks[job.id]
        borrowed = sum(admission.borrowed.values())
        self.starts.append(Start(task.key, task.pool, task.slots, borrowed))
        return job.started(now, borrowing=borrowed > 0)

    def preempt(self, job: RunningJob, preemption: Preemption, now: float) -> None:
        task = self.tasks[job.id]
        by = self.tasks[preemption.preemptor]
        preemptor = by.key
        what = "Failed" if preemption.fails else "Cleared"
        note = (
            f"{what} by the quota pool manager for {preemptor} "
            f"({preemption.kind.value}): {preemption.message}"
        )
        self.stops.append(
            Stop(
                task.key,
                task.pool,
                preemption.kind,
                preemptor,
                preemption.fails,
                note[:NOTE_LIMIT],
                task.slots,
                started=task.start_date,
                try_number=task.try_number,
                preemptor_pool=by.pool,
            )
        )

    def fail(self, job: WaitingJob, failure: Failure, now: float) -> None:
        # every task that could never fit was refused before the state was built, and
        # shares cannot disappear within a cycle
        raise AssertionError(f"unexpected failure of {job.id}: {failure.message}")
