"""Properties of the pool manager's decision step over random fleets and task instances.

The snapshots are physically possible: the tasks that hold capacity (restarting
ones too) fit each share's limit and the fleet's capacity.
"""

from __future__ import annotations

import os
from dataclasses import replace

from hypothesis import given, settings, target
from hypothesis import strategies as st

from airflow_quota_provider.airflow_pools.decide import PoolPlan, decide
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import QueueConfig
from airflow_quota_provider.core.task_key import TaskKey
from tests.core.strategies import queue_configs

HUNT = os.environ.get("PROPERTY_EXAMPLES")
PROPERTY = settings(
    max_examples=int(HUNT or 200), deadline=None, database=None, derandomize=HUNT is None
)
"""The same 200 examples every run; ``PROPERTY_EXAMPLES=2000`` hunts with fresh ones."""
NOW = 100.0
STATES = [TaskState.SCHEDULED] * 3 + [
    TaskState.RUNNING,
    TaskState.RUNNING,
    TaskState.QUEUED,
    TaskState.DEFERRED,
    TaskState.RESTARTING,
    TaskState.OTHER,
]


@st.composite
def snapshots(draw: st.DrawFn) -> tuple[Fleet, list[PoolTask]]:
    config: QueueConfig = draw(queue_configs(min_runtime=False))
    fleet = Fleet.of(config)
    return fleet, draw(task_lists(fleet))


@st.composite
def task_lists(draw: st.DrawFn, fleet: Fleet) -> list[PoolTask]:
    """Task instances of ``fleet``'s pools (keys ``t0`` to ``t15``) that fit what it holds."""
    config = fleet.config
    pools = sorted(fleet.shares)
    held: dict[tuple[str, str], int] = {}
    tasks = []
    for n in range(draw(st.integers(0, 16))):
        pool = draw(st.sampled_from(pools))
        share_name, unit = fleet.shares[pool]
        share = config.share(share_name)
        assert share is not None
        # mostly small enough to fit, now and then more than the share could ever hold
        largest = config.capacity[unit] + 1 if draw(st.integers(0, 5)) == 0 else 3
        slots = draw(st.integers(1, max(1, largest)))
        state = draw(st.sampled_from(STATES))
        if state.holds:
            used = held.get((share_name, unit), 0)
            total = sum(v for (_, u), v in held.items() if u == unit)
            if (
                used + slots > config.share_limit(share, unit)
                or total + slots > config.capacity[unit]
            ):
                state = TaskState.SCHEDULED
            else:
                held[(share_name, unit)] = used + slots
        started = float(draw(st.integers(0, 90))) if state.holds else None
        weight = draw(st.integers(0, 3))
        run_date = float(draw(st.integers(0, 5)))
        key = TaskKey("dag", f"run-{n % 3}", f"t{n}")
        tasks.append(PoolTask(key, pool, slots, weight, run_date, state, started))
    return tasks


def decided(snapshot: tuple[Fleet, list[PoolTask]]) -> tuple[Fleet, list[PoolTask], PoolPlan]:
    """The snapshot and its plan, steering Hypothesis toward plans with many preemptions."""
    fleet, tasks = snapshot
    plan = decide(fleet, tasks, NOW)
    target(float(len(plan.stop)), label="stops")
    return fleet, tasks, plan


def physical(fleet: Fleet, tasks: list[PoolTask], plan: PoolPlan) -> dict[str, int]:
    """Units in use once every started task runs (stopping victims still hold theirs)."""
    used: dict[str, int] = {}
    started = {start.key for start in plan.start}
    for task in tasks:
        if task.state.holds or task.key in started:
            unit = fleet.shares[task.pool][1]
            used[unit] = used.get(unit, 0) + task.slots
    return used


@PROPERTY
@given(snapshots())
def test_what_opens_never_takes_a_unit_beyond_the_fleet_or_a_share_beyond_its_limit(
    snapshot: tuple[Fleet, list[PoolTask]],
) -> None:
    fleet, tasks, plan = decided(snapshot)
    for unit, used in physical(fleet, tasks, plan).items():
        assert used <= fleet.config.capacity[unit], f"{used} {unit} in use: {plan}"
    for pool, slots in plan.slots.items():
        share_name, unit = fleet.shares[pool]
        share = fleet.config.share(share_name)
        assert share is not None
        assert slots <= fleet.config.share_limit(share, unit), f"{pool} has {slots} slots"


@PROPERTY
@given(snapshots())
def test_a_pools_open_slots_are_exactly_what_was_started_in_it(
    snapshot: tuple[Fleet, list[PoolTask]],
) -> None:
    fleet, tasks, plan = decided(snapshot)
    stopped = {stop.key for stop in plan.stop}
    for pool in fleet:
        counted = sum(
            t.slots for t in tasks if t.pool == pool and t.state.counted and t.key not in stopped
        )
        opened = sum(start.slots for start in plan.start if start.pool == pool)
        assert plan.slots[pool] == (counted + opened if opened else 0)


@PROPERTY
@given(snapshots())
def test_every_scheduled_task_starts_is_refused_or_has_a_reason_and_only_holders_stop(
    snapshot: tuple[Fleet, list[PoolTask]],
) -> None:
    _, tasks, plan = decided(snapshot)
    scheduled = {t.key for t in tasks if t.state is TaskState.SCHEDULED}
    started = [start.key for start in plan.start]
    refused = [refusal.key for refusal in plan.refuse]
    assert sorted([*started, *refused, *plan.waiting]) == sorted(scheduled)
    by_key = {t.key: t for t in tasks}
    for stop in plan.stop:
        assert by_key[stop.key].state.counted, f"{stop.key} is {by_key[stop.key].state}"
        # a preemptor mostly waits for its victims; under FAIR it may start on idle
        # capacity in a later cycle of the same settle (its share's borrowed part shrank)
        assert stop.preemptor in plan.waiting or stop.preemptor in started


@PROPERTY
@given(snapshots())
def test_once_applied_the_next_cycle_starts_and_stops_nothing_more(
    snapshot: tuple[Fleet, list[PoolTask]],
) -> None:
    """Starts become running, victims restarting, refused tasks failed: deciding again at
    once changes nothing (no decision is applied twice, no thrash between cycles)."""
    fleet, tasks, plan = decided(snapshot)
    started = {start.key for start in plan.start}
    stopped = {stop.key for stop in plan.stop}
    refused = {refusal.key for refusal in plan.refuse}
    after = []
    for task in tasks:
        if task.key in started:
            task = replace(task, state=TaskState.RUNNING, start_date=NOW)
        elif task.key in stopped:
            task = replace(task, state=TaskState.RESTARTING)
        elif task.key in refused:
            task = replace(task, state=TaskState.OTHER)
        after.append(task)
    again = decide(fleet, after, NOW)
    assert again.start == () and again.stop == () and again.refuse == ()
    assert not any(again.slots.values()), "once its admitted tasks hold, every pool is shut"
