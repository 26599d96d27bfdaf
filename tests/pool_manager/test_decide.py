"""The pool manager's decision step: task instances as Airflow shows them -> slots, clears,
reasons. Tables with whole-object expectations; messages checked word for word."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.decide import (
    PoolPlan,
    Refusal,
    Start,
    Stop,
    decide,
)
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import PreemptionKind, WaitCode
from airflow_quota_provider.core.model import Backend, Sharing
from airflow_quota_provider.core.task_key import TaskKey
from tests.core.builders import queue, share

CONFIG = replace(
    queue(
        share("nlp").capacity(gpu=8).lend_and_borrow().in_share_preemption(),
        share("vision").capacity(gpu=8).lend_and_borrow(limit=100),
        share("eval").capacity(gpu=0).lend(),
        gpu=16,
    ),
    backend=Backend.AIRFLOW_POOLS,
    pools={"vision": {"gpu": "vision-gpus"}},
)
FLEET = Fleet.of(CONFIG)
NLP, VISION = "quota-nlp-gpu", "vision-gpus"


def key(task_id: str, map_index: int = -1) -> TaskKey:
    return TaskKey("train", "run-1", task_id, map_index)


def task(
    task_id: str,
    pool: str,
    slots: int,
    state: TaskState = TaskState.SCHEDULED,
    weight: int = 1,
    started: float | None = None,
    run_date: float = 0.0,
) -> PoolTask:
    if state.holds and started is None:
        started = 0.0
    return PoolTask(key(task_id), pool, slots, weight, run_date, state, started)


RUNNING, RESTARTING = TaskState.RUNNING, TaskState.RESTARTING


def slots(**pools: int) -> dict[str, int]:
    """Every managed pool's slots; those not named are 0."""
    result = dict.fromkeys(FLEET.shares, 0)
    result.update({NLP: pools.pop("nlp", 0), VISION: pools.pop("vision", 0)})
    assert not pools
    return result


def test_the_pools_of_a_fleet_are_named_by_the_config_or_by_default() -> None:
    assert FLEET.shares == {
        "quota-nlp-gpu": ("nlp", "gpu"),
        "vision-gpus": ("vision", "gpu"),
        "quota-eval-gpu": ("eval", "gpu"),
    }


def test_a_task_that_fits_what_its_share_owns_opens_exactly_its_slots() -> None:
    plan = decide(FLEET, [task("a", NLP, 2, RUNNING), task("b", NLP, 4)], now=10)
    assert plan == PoolPlan(slots=slots(nlp=6), start=(Start(key("b"), NLP, 4, 0),))


def test_a_large_head_is_not_overtaken_by_smaller_tasks_behind_it() -> None:
    tasks = [
        task("running", NLP, 4, RUNNING, weight=20),
        task("vision", VISION, 8, RUNNING),
        task("big", NLP, 8, weight=10),
        task("small", NLP, 1, weight=1),
    ]
    plan = decide(FLEET, tasks, now=10)
    assert plan.slots == slots(), "shut: no open slot a smaller task could take"
    assert plan.start == () and plan.stop == ()
    big, small = plan.waiting[key("big")], plan.waiting[key("small")]
    assert big.code is WaitCode.WAITING_FOR_OWN_CAPACITY
    assert big.message == (
        "nlp needs 8 gpu; it uses 4 of 8 and waits for its own jobs to leave room (a job "
        "that would borrow does not reclaim lent gpu); only 0 idle gpu can be lent to it "
        "meanwhile (4 more needed)"
    )
    assert small.code is WaitCode.BEHIND_IN_SHARE
    assert small.message == (
        "2nd in share nlp's queue; behind train/run-1/big (priority 10 > 1), "
        "which is waiting: WAITING_FOR_OWN_CAPACITY"
    )


def test_a_pool_is_shut_between_admissions_so_a_holders_end_frees_no_slot() -> None:
    # a cycle admits "small" behind a running holder: the pool opens exactly its slot
    running = [task("holder", NLP, 4, RUNNING, weight=20), task("vision", VISION, 8, RUNNING)]
    waiting = [task("big", NLP, 6, weight=10)]
    plan = decide(FLEET, [*running, *waiting], now=10)
    assert plan.start == () and plan.slots == slots(), "nothing admitted: every pool shut"
    # Airflow's open slots are slots minus what its tasks hold: 0 - 4 while the holder
    # runs, 0 - 0 once it ended; never above 0, so the scheduler queues nobody in the
    # meantime. The next cycle admits the head, for which the pool opens exactly 6.
    plan = decide(FLEET, [running[1], *waiting], now=20)
    assert plan.start == (Start(key("big"), NLP, 6, 0),)
    assert plan.slots == slots(nlp=6)


def test_idle_capacity_is_lent_and_the_borrowers_pool_grows_beyond_what_it_owns() -> None:
    plan = decide(FLEET, [task("v1", VISION, 8, RUNNING), task("v2", VISION, 6)], now=10)
    assert plan == PoolPlan(slots=slots(vision=14), start=(Start(key("v2"), VISION, 6, 6),))


def test_an_owner_reclaims_its_pool_shrinks_nothing_else_opens_until_the_victim_is_gone() -> None:
    borrowing = [
        task("v-own", VISION, 8, RUNNING, started=0),
        task("v-borrow", VISION, 6, RUNNING, started=5),
    ]
    # 1. the owner's task appears: the borrower is cleared, the owner's pool stays shut
    plan = decide(FLEET, [*borrowing, task("n", NLP, 8, weight=5)], now=100)
    assert plan.slots == slots()
    assert plan.start == ()
    assert plan.stop == (
        Stop(
            key("v-borrow"),
            VISION,
            PreemptionKind.RECLAIM,
            key("n"),
            fails=False,
            note=(
                "Cleared by the quota pool manager for train/run-1/n (RECLAIM): share vision "
                "borrows 6 gpu (uses 14, owns 8); share nlp reclaims it for job train/run-1/n, "
                "which needs 8 gpu within what its share owns"
            ),
            slots=6,
            started=5,
            preemptor_pool=NLP,
        ),
    )
    assert plan.waiting[key("n")].code is WaitCode.PREEMPTION_IN_PROGRESS
    # 2. cleared, its process still alive (restarting): still nothing opens for the owner
    stopping = [borrowing[0], task("v-borrow", VISION, 6, RESTARTING, started=5)]
    plan = decide(FLEET, [*stopping, task("n", NLP, 8, weight=5)], now=103)
    assert plan.slots == slots() and plan.start == () and plan.stop == ()
    assert plan.waiting[key("n")].message == (
        "nlp waits for preempted jobs to stop: train/run-1/v-borrow"
    )
    # 3. its process is gone, it waits again: the owner's pool opens, the victim waits
    gone = [borrowing[0], task("v-borrow", VISION, 6), task("n", NLP, 8, weight=5)]
    plan = decide(FLEET, gone, now=110)
    assert plan.slots == slots(nlp=8), "the owner's pool opens; vision's stays shut"
    assert plan.start == (Start(key("n"), NLP, 8, 0),)
    assert plan.waiting[key("v-borrow")].code is WaitCode.NO_IDLE_CAPACITY


def test_the_task_that_started_last_is_the_borrower_whatever_its_size() -> None:
    tasks = [
        task("late", VISION, 2, RUNNING, started=50),
        task("early", VISION, 8, RUNNING, started=10),
        task("n", NLP, 8),
    ]
    plan = decide(FLEET, [*tasks, task("n2", NLP, 2)], now=100)
    assert [(stop.key, stop.kind) for stop in plan.stop] == [(key("late"), PreemptionKind.RECLAIM)]


def test_an_urgent_task_preempts_a_lower_priority_one_of_its_share() -> None:
    tasks = [
        task("low", NLP, 6, RUNNING, weight=1),
        task("vision", VISION, 10, RUNNING),
        task("urgent", NLP, 4, weight=100),
    ]
    plan = decide(FLEET, tasks, now=10)
    assert [(s.key, s.kind, s.preemptor) for s in plan.stop] == [
        (key("low"), PreemptionKind.IN_SHARE, key("urgent"))
    ]
    assert plan.slots == slots()


def test_a_deferred_task_holds_its_slots() -> None:
    tasks = [task("waiting-on-sagemaker", NLP, 8, TaskState.DEFERRED), task("next", NLP, 8)]
    plan = decide(FLEET, [*tasks, task("vision", VISION, 8, RUNNING)], now=10)
    assert plan.slots == slots() and plan.start == ()


def test_a_task_that_could_never_fit_its_share_is_refused_with_what_the_share_can_hold() -> None:
    plan = decide(FLEET, [task("huge", VISION, 17), task("ok", VISION, 1)], now=10)
    assert plan.refuse == (
        Refusal(
            key("huge"),
            VISION,
            "Failed by the quota pool manager: pool_slots=17 in pool vision-gpus can never "
            "run: the job needs 17 gpu; fleet q has 16. The fleet itself is too small: share "
            "vision may hold at most 16 gpu of it (owns 8, borrow_limit 100%); lower "
            "pool_slots to 16 or less.",
        ),
    )
    assert plan.start == (Start(key("ok"), VISION, 1, 0),)


def _vision(**changes: Any) -> Fleet:
    shares = tuple(replace(s, **changes) if s.name == "vision" else s for s in CONFIG.shares)
    return Fleet.of(replace(CONFIG, shares=shares))


LEND_ONLY = _vision(sharing=Sharing.LEND)
HALF = _vision(borrow_limit=50)
NEVER_FITS = {
    "the fleet is too small for it: only fewer slots help": (
        FLEET,
        17,
        "the job needs 17 gpu; fleet q has 16. The fleet itself is too small: share vision may "
        "hold at most 16 gpu of it (owns 8, borrow_limit 100%); lower pool_slots to 16 or less.",
    ),
    "the fleet is too small and the share may hold less than it has": (
        LEND_ONLY,
        17,
        "the job needs 17 gpu; fleet q has 16. The fleet itself is too small: share vision may "
        "hold at most 8 gpu of it (owns 8, LEND does not borrow); lower pool_slots to 8 or less.",
    ),
    "a borrow limit below what the fleet has: raising it would help": (
        HALF,
        13,
        "the job needs 13 gpu; share vision may hold at most 12 (owns 8, borrow_limit 50%). "
        "The fleet has 16 gpu in all: lower pool_slots to 12 or less, or raise share vision's "
        "capacity or borrow_limit.",
    ),
    "a share that does not borrow: letting it borrow would help": (
        LEND_ONLY,
        9,
        "the job needs 9 gpu; share vision may hold at most 8 (owns 8, LEND does not borrow). "
        "The fleet has 16 gpu in all: lower pool_slots to 8 or less, or raise share vision's "
        "capacity or let it borrow (LEND_AND_BORROW).",
    ),
}


@pytest.mark.parametrize(
    ("fleet", "slots", "why"), NEVER_FITS.values(), ids=list(NEVER_FITS.keys())
)
def test_a_task_that_never_fits_is_told_what_is_possible(
    fleet: Fleet, slots: int, why: str
) -> None:
    (refusal,) = decide(fleet, [task("big", VISION, slots)], now=10).refuse
    assert refusal.note == (
        f"Failed by the quota pool manager: pool_slots={slots} in pool vision-gpus can never "
        f"run: {why}"
    )


def test_a_share_that_owns_nothing_and_never_borrows_is_told_to_own_or_borrow() -> None:
    (refusal,) = decide(FLEET, [task("e", "quota-eval-gpu", 1)], now=10).refuse
    assert refusal.note.endswith(
        "run: the job needs 1 gpu; share eval may hold at most 0 (owns 0, LEND does not "
        "borrow). The fleet has 16 gpu in all: raise share eval's capacity or let it borrow "
        "(LEND_AND_BORROW)."
    )


def test_a_task_whose_preemptions_are_used_up_is_failed_not_cleared() -> None:
    tasks = [
        task("low", NLP, 8, RUNNING, weight=1),
        task("vision", VISION, 8, RUNNING),
        task("urgent", NLP, 8, weight=100),
    ]
    tasks[0] = replace(tasks[0], preemption_retries=2)
    (stop,) = decide(FLEET, tasks, now=10, preemptions={key("low"): 2}).stop
    assert stop.fails and stop.note.startswith("Failed by the quota pool manager for ")


def test_a_share_caps_preemptions_of_tasks_that_set_no_cap_of_their_own() -> None:
    capped = replace(CONFIG, shares=tuple(replace(s, preemption_retries=1) for s in CONFIG.shares))
    tasks = [
        task("low", NLP, 8, RUNNING, weight=1),
        task("vision", VISION, 8, RUNNING),
        task("urgent", NLP, 8, weight=100),
    ]
    (stop,) = decide(Fleet.of(capped), tasks, now=10, preemptions={key("low"): 1}).stop
    assert stop.fails
    (stop,) = decide(Fleet.of(capped), tasks, now=10, preemptions={key("low"): 0}).stop
    assert not stop.fails


def test_a_share_whose_tasks_are_not_preemptible_is_never_reclaimed_and_the_owner_says_why() -> (
    None
):
    fixed = replace(
        CONFIG,
        shares=tuple(
            replace(s, preemptible=False) if s.name == "vision" else s for s in CONFIG.shares
        ),
    )
    tasks = [
        task("v-own", VISION, 8, RUNNING, started=0),
        task("v-borrow", VISION, 6, RUNNING, started=5),
        task("n", NLP, 8),
    ]
    plan = decide(Fleet.of(fixed), tasks, now=100)
    assert plan.stop == () and plan.start == ()
    wait = plan.waiting[key("n")]
    assert (wait.code, wait.message) == (
        WaitCode.WAITING_FOR_OWN_CAPACITY,
        "nlp needs 8 gpu within what it owns (uses 0 of 8); 2 free, the rest is held by jobs "
        "that cannot be preempted now; train/run-1/v-borrow, train/run-1/v-own would make "
        "room but are not preemptible",
    )
    # a task of that share that says it is preemptible is reclaimed as usual
    tasks[1] = replace(tasks[1], preemptible=True)
    plan = decide(Fleet.of(fixed), tasks, now=100)
    assert [stop.key for stop in plan.stop] == [key("v-borrow")]


def test_a_task_may_protect_itself_from_preemption_or_for_a_while() -> None:
    tasks = [
        task("low", NLP, 6, RUNNING, weight=1),
        task("vision", VISION, 10, RUNNING, started=90),
        task("urgent", NLP, 4, weight=100),
    ]
    tasks[0] = replace(tasks[0], preemptible=False)
    plan = decide(FLEET, tasks, now=100)
    assert plan.stop == ()
    assert plan.waiting[key("urgent")].message.endswith(
        "train/run-1/low would make room but is not preemptible"
    )
    # its own min_runtime_seconds keeps a borrower running for that long after it started
    reclaim = [task("vision", VISION, 14, RUNNING, started=90), task("n", NLP, 8)]
    reclaim[0] = replace(reclaim[0], min_runtime_seconds=60)
    plan = decide(FLEET, reclaim, now=100)
    assert (plan.stop, plan.recheck_at) == ((), 150)
    assert [stop.key for stop in decide(FLEET, reclaim, now=150).stop] == [key("vision")]


def test_tasks_of_other_pools_are_none_of_its_business() -> None:
    plan = decide(FLEET, [task("etl", "default_pool", 100), task("a", NLP, 1)], now=10)
    assert plan == PoolPlan(slots=slots(nlp=1), start=(Start(key("a"), NLP, 1, 0),))


def test_the_order_is_airflows_priority_weight_then_run_date() -> None:
    tasks = [
        task("old-low", NLP, 8, weight=1, run_date=0),
        task("new-high", NLP, 8, weight=2, run_date=100),
        task("old-high", NLP, 8, weight=2, run_date=50),
    ]
    plan = decide(FLEET, [*tasks, task("vision", VISION, 8, RUNNING)], now=200)
    assert plan.start == (Start(key("old-high"), NLP, 8, 0),)
    assert list(plan.waiting) == [key("new-high"), key("old-low")]
