"""The pools planner: whole plans from Airflow's pools and the tasks in them, no Airflow
involved. Tables with plain-English ids; messages checked word for word."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.pools import PoolSlots, pool_description
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.exceptions import Problem
from airflow_quota_provider.sync.changes import Change
from airflow_quota_provider.sync.pool_plan import PoolsState, plan_pools
from tests.core.builders import queue, share

# two teams share 4 GPUs; vision's pool is named by the config, nlp's is the default one
FLEET = Fleet.of(
    replace(
        queue(
            share("nlp").capacity(gpu=2).lend_and_borrow(),
            share("vision").capacity(gpu=2).lend_and_borrow(),
            gpu=4,
        ),
        job_queue="gpus",
        backend=Backend.AIRFLOW_POOLS,
        pools={"vision": {"gpu": "vision-gpus"}},
    )
)
NLP, VISION, OLD = "quota-nlp-gpu", "vision-gpus", "quota-old-gpu"
NLP_MARK = pool_description("gpus", "nlp", "gpu")
VISION_MARK = pool_description("gpus", "vision", "gpu")
OLD_MARK = pool_description("gpus", "old", "gpu")
RUNNING, DEFERRED, QUEUED = TaskState.RUNNING, TaskState.DEFERRED, TaskState.QUEUED
SCHEDULED, RESTARTING = TaskState.SCHEDULED, TaskState.RESTARTING


def ours(name: str, slots: int = 0, include_deferred: bool = True) -> PoolSlots:
    return PoolSlots(name, slots, include_deferred, FLEET.description(name))


def other(
    name: str, slots: int, description: str | None, include_deferred: bool = True
) -> PoolSlots:
    return PoolSlots(name, slots, include_deferred, description)


def task(task_id: str, pool: str, slots: int, state: TaskState = SCHEDULED) -> PoolTask:
    started = 0.0 if state.holds else None
    return PoolTask(TaskKey("train", "run-1", task_id), pool, slots, 1, 0.0, state, started)


def create(pool: str, slots: int, share_name: str, why: str | None = None) -> Change:
    details = (f"{slots} slot" if slots == 1 else f"{slots} slots", "include_deferred on")
    return Change("create", "pool", pool, (*details, f"share {share_name}, gpu"), why)


def update(pool: str, *details: str, why: str | None = None) -> Change:
    return Change("update", "pool", pool, details, why)


def mark(old: str | None, pool: str) -> str:
    """The detail line of a description set to the manager's."""
    before = "(none)" if old is None else f'"{old}"'
    return f'description {before} -> "{FLEET.description(pool)}"'


def set_call(pool: str, slots: int) -> tuple[str, dict[str, Any]]:
    return ("set_pool", {"name": pool, "slots": slots, "description": FLEET.description(pool)})


def create_call(pool: str, slots: int) -> tuple[str, dict[str, Any]]:
    return ("create_pool", {"name": pool, "slots": slots, "description": FLEET.description(pool)})


def adopted(path: str, pool: str, description: str, share_name: str) -> Problem:
    return Problem(
        path,
        f'pool {pool} was not made by the pool manager (description "{description}"); apply '
        f"adopts it for share {share_name}'s gpu: from then on the pool manager sets its slots",
    )


@dataclass
class Case:
    id: str
    pools: list[PoolSlots]
    tasks: list[PoolTask]
    want_changes: tuple[Change, ...]
    want_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    want_warnings: tuple[Problem, ...] = ()
    want_blockers: tuple[str, ...] = ()
    want_notes: tuple[str, ...] = field(default=())


CASES = [
    Case(
        "an Airflow without the pools gets them, opening nothing while no task waits",
        [],
        [],
        (create(NLP, 0, "nlp"), create(VISION, 0, "vision")),
        (create_call(NLP, 0), create_call(VISION, 0)),
    ),
    Case(
        "a missing pool opens what the core admits now for the tasks waiting in it, "
        "borrowing included",
        [ours(NLP)],
        [task("v", VISION, 4)],
        (create(VISION, 4, "vision"),),
        (create_call(VISION, 4),),
    ),
    Case(
        "a missing pool opens nothing while another share borrows what it owns; the manager "
        "would reclaim it first",
        [ours(VISION, 4)],
        [task("v", VISION, 4, RUNNING), task("n", NLP, 2)],
        (create(NLP, 0, "nlp"),),
        (create_call(NLP, 0),),
        want_notes=("pool vision-gpus slots 4 -> 0",),
    ),
    Case(
        "a pool deleted by hand under running tasks comes back shut (they keep running; "
        "the manager opens it for the tasks it admits)",
        [ours(VISION)],
        [task("n", NLP, 2, RUNNING)],
        (create(NLP, 0, "nlp"),),
        (create_call(NLP, 0),),
    ),
    Case(
        "a pool deleted by hand comes back open for the task the core admits, beside the "
        "ones that hold slots in it",
        [ours(VISION)],
        [task("n", NLP, 2, RUNNING), task("n2", NLP, 1)],
        (create(NLP, 3, "nlp"),),
        (create_call(NLP, 3),),
    ),
    Case(
        "the manager's pools that match have nothing to change and nothing to note",
        [ours(NLP, 0), ours(VISION)],
        [task("n", NLP, 2, RUNNING)],
        (),
    ),
    Case(
        "the manager's pools keep their slots, whatever they are: the manager sets them each "
        "cycle; plan notes what it would set now",
        [ours(NLP, 3), ours(VISION, 1)],
        [],
        (),
        want_notes=("pool quota-nlp-gpu slots 3 -> 0", "pool vision-gpus slots 1 -> 0"),
    ),
    Case(
        "include_deferred turned off by hand is turned on, the slots kept",
        [ours(NLP, 3, include_deferred=False), ours(VISION)],
        [],
        (update(NLP, "include_deferred off -> on"),),
        (set_call(NLP, 3),),
        want_notes=("pool quota-nlp-gpu slots 3 -> 0",),
    ),
    Case(
        "a description the fleet wrote for another of its shares is set right, the slots kept",
        [ours(NLP), other(VISION, 0, NLP_MARK)],
        [task("v", VISION, 2, RUNNING)],
        (update(VISION, f'description "{NLP_MARK}" -> "{VISION_MARK}"'),),
        (set_call(VISION, 0),),
    ),
    Case(
        "a pool made by hand is adopted with a warning: the core's slots, include_deferred on, "
        "the manager's description",
        [other(NLP, 8, "GPUs of team nlp", include_deferred=False), ours(VISION)],
        [task("n", NLP, 1, RUNNING)],
        (update(NLP, "slots 8 -> 0", "include_deferred off -> on", mark("GPUs of team nlp", NLP)),),
        (set_call(NLP, 0),),
        want_warnings=(adopted("shares[0]", NLP, "GPUs of team nlp", "nlp"),),
    ),
    Case(
        "an unlimited pool without a description is adopted and limited",
        [other(NLP, -1, None), ours(VISION)],
        [],
        (update(NLP, "slots unlimited -> 0", mark(None, NLP)),),
        (set_call(NLP, 0),),
        want_warnings=(
            Problem(
                "shares[0]",
                "pool quota-nlp-gpu was not made by the pool manager (description (none)); "
                "apply adopts it for share nlp's gpu: from then on the pool manager sets its "
                "slots",
            ),
        ),
    ),
    Case(
        "adopting a pool whose running task the core would preempt (for nlp) is destructive; "
        "its slots below what its tasks hold are not",
        [ours(NLP), other(VISION, 8, "vision team")],
        [task("v", VISION, 3, RUNNING), task("d", VISION, 1, DEFERRED), task("n", NLP, 2)],
        (
            update(
                VISION,
                "slots 8 -> 0",
                mark("vision team", VISION),
                why="its tasks hold 3 slots beyond what the share may hold now: the pool "
                "manager preempts train/run-1/v",
            ),
        ),
        (set_call(VISION, 0),),
        want_warnings=(adopted("pools.vision.gpu", VISION, "vision team", "vision"),),
    ),
    Case(
        "adopted pools are lowered before any is raised, so no GPU is promised twice meanwhile",
        [other(NLP, 0, "nlp"), other(VISION, 4, "vision")],
        [task("n", NLP, 2)],
        (
            update(VISION, "slots 4 -> 0", mark("vision", VISION)),
            update(NLP, "slots 0 -> 2", mark("nlp", NLP)),
        ),
        (set_call(VISION, 0), set_call(NLP, 2)),
        want_warnings=(
            adopted("shares[0]", NLP, "nlp", "nlp"),
            adopted("pools.vision.gpu", VISION, "vision", "vision"),
        ),
    ),
    Case(
        "a pool another fleet's manager keeps blocks the apply",
        [other(NLP, 2, pool_description("a100s", "nlp", "gpu")), ours(VISION)],
        [],
        (),
        want_blockers=(
            "pool quota-nlp-gpu is managed by airflow-quota pool-manager for fleet a100s (its "
            "description says so); two managers would fight over its slots: name another pool "
            "for share nlp's gpu in the config (pools.nlp.gpu)",
        ),
    ),
    Case(
        "a pool of the fleet that the config no longer names is deleted first, destructively",
        [ours(NLP), ours(VISION), other(OLD, 2, OLD_MARK)],
        [task("n", NLP, 2)],
        (Change("delete", "pool", OLD, destructive="not in the config"),),
        (("delete_pool", {"name": OLD}),),
        want_notes=("pool quota-nlp-gpu slots 0 -> 2",),
    ),
    Case(
        "deleting a pool names the tasks waiting in it: they would never start",
        [ours(NLP), ours(VISION), other(OLD, 2, OLD_MARK)],
        [task("a", OLD, 1), task("b", OLD, 2)],
        (
            Change(
                "delete",
                "pool",
                OLD,
                destructive="not in the config; 2 tasks waiting in it would never start "
                "(Airflow starts no task of a missing pool)",
            ),
        ),
        (("delete_pool", {"name": OLD}),),
    ),
    Case(
        "a pool in which a task is queued, runs, is deferred or is stopping is not deleted",
        [ours(NLP), ours(VISION), other(OLD, 8, OLD_MARK)],
        [
            task("d", OLD, 1, DEFERRED),
            task("q", OLD, 1, QUEUED),
            task("r", OLD, 1, RUNNING),
            task("s", OLD, 1, RESTARTING),
            task("w", OLD, 1),
        ],
        (
            Change(
                "delete",
                "pool",
                OLD,
                destructive="not in the config; 1 task waiting in it would never start "
                "(Airflow starts no task of a missing pool)",
            ),
        ),
        (("delete_pool", {"name": OLD}),),
        want_blockers=(
            "pool quota-old-gpu cannot be deleted while 4 tasks hold slots in it: "
            "train/run-1/d (deferred), train/run-1/q (queued), train/run-1/r (running) and 1 "
            "more; apply again once they have ended",
        ),
    ),
    Case(
        "one task holding slots is named in the blocker",
        [ours(NLP), ours(VISION), other(OLD, 8, OLD_MARK)],
        [task("r", OLD, 4, RUNNING)],
        (Change("delete", "pool", OLD, destructive="not in the config"),),
        (("delete_pool", {"name": OLD}),),
        want_blockers=(
            "pool quota-old-gpu cannot be deleted while 1 task holds slots in it: "
            "train/run-1/r (running); apply again once they have ended",
        ),
    ),
    Case(
        "pools without this fleet's mark are never touched: Airflow's, people's, other fleets', "
        "and those of an older manager that named no fleet",
        [
            ours(NLP),
            ours(VISION),
            other("default_pool", 128, "Default pool"),
            other("etl", 4, "ETL jobs"),
            other("quota-x-gpu", 2, pool_description("a100s", "x", "gpu")),
            other("quota-y-gpu", 2, "quota share y, gpu: managed by airflow-quota pool-manager"),
        ],
        [],
        (),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_plan(case: Case) -> None:
    state = PoolsState({p.name: p for p in case.pools}, case.tasks)
    result = plan_pools(FLEET, state, now=100)
    assert result.changes == case.want_changes
    assert [(c.operation, dict(c.params)) for c in result.calls] == list(case.want_calls)
    assert [c.change for c in result.calls] == list(result.changes), "one call per change"
    assert result.warnings == case.want_warnings
    assert result.blockers == case.want_blockers
    assert result.notes == case.want_notes


def test_a_task_of_a_pool_outside_the_fleet_changes_nothing() -> None:
    state = PoolsState({NLP: ours(NLP), VISION: ours(VISION)}, [task("e", "etl", 4, RUNNING)])
    assert plan_pools(FLEET, state, now=100).empty
