"""The decision state kept between cycles decides as a rebuild does, after any changes.

Random sequences of snapshots of one fleet (the same keys, so tasks appear, move
between pools, change state, leave the managed pools and disappear), taken by a
:class:`Standing` as Airflow's changes (the whole list, or only what changed) with
preemption counts that change too, and decided at a clock that moves: after each
step its plan is the plan of ``decide`` over the same tasks, and a rebuild finds no
difference.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from airflow_quota_provider.airflow_pools.decide import PoolPlan, decide
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.standing import Standing
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import QueueConfig
from airflow_quota_provider.core.task_key import TaskKey
from tests.core.strategies import queue_configs
from tests.pool_manager.test_decide import FLEET, NLP, task
from tests.pool_manager.test_decide_properties import PROPERTY, task_lists

Step = tuple[list[PoolTask], dict[TaskKey, int], bool, float]
"""The tasks Airflow shows, the preemption counts, whether only the changes are
given, and the time of the cycle."""


@st.composite
def histories(draw: st.DrawFn) -> tuple[Fleet, list[Step]]:
    config: QueueConfig = draw(queue_configs(min_runtime=False))
    fleet = Fleet.of(config)
    steps = []
    now = 100.0
    for _ in range(draw(st.integers(1, 6))):
        tasks = []
        for drawn in draw(task_lists(fleet)):
            if drawn.state is TaskState.QUEUED and draw(st.booleans()):
                drawn = replace(drawn, start_date=None)  # queued, not started yet
            if draw(st.integers(0, 7)) == 0:
                drawn = replace(drawn, pool="elsewhere")  # moved out of the managed pools
            tasks.append(drawn)
        counts = draw(st.dictionaries(st.sampled_from([t.key for t in tasks] or [KEY]), COUNTS))
        now += draw(st.integers(0, 30))
        steps.append((tasks, counts, draw(st.booleans()), now))
    return fleet, steps


KEY = TaskKey("dag", "run-0", "t0")
COUNTS = st.integers(0, 3)


def as_plan(plan: PoolPlan) -> tuple[object, ...]:
    """A plan as compared: the refusals in any order (each is failed on its own)."""
    waiting = [(key, plan.waiting[key]) for key in plan.waiting]
    refuse = sorted(plan.refuse, key=lambda refusal: refusal.key)
    return (dict(plan.slots), plan.start, plan.stop, refuse, waiting, plan.recheck_at)


def changes(before: list[PoolTask], after: list[PoolTask]) -> tuple[list[PoolTask], list[TaskKey]]:
    """What Airflow changed between two reads: new or changed tasks, and the keys gone."""
    old = {task.key: task for task in before}
    keys = {task.key for task in after}
    return [t for t in after if old.get(t.key) != t], [k for k in old if k not in keys]


@PROPERTY
@given(histories())
def test_the_kept_state_decides_as_a_rebuild_after_any_changes(
    history: tuple[Fleet, list[Step]],
) -> None:
    fleet, steps = history
    standing = Standing(fleet)
    before: list[PoolTask] = []
    for tasks, counts, only_changes, now in steps:
        if only_changes:
            changed, gone = changes(before, tasks)
            standing.change(changed, gone, counts)
        else:
            standing.update(tasks, counts)
        before = tasks
        assert as_plan(standing.decide(now)) == as_plan(decide(fleet, tasks, now, counts))
        assert standing.compare(Standing.of(fleet, tasks, counts), now) == []


def test_a_heal_takes_what_airflow_shows_and_counts_each_difference() -> None:
    a, b = task("a", NLP, 2, TaskState.RUNNING), task("b", NLP, 4)
    standing = Standing.of(FLEET, [a, b])
    assert standing.heal([a, b], {}, now=10) == 0
    # a change the manager never saw (its read failed, say): the heal finds and takes it
    ended = replace(a, state=TaskState.OTHER)
    assert standing.heal([ended, b], {}, now=10) == 2  # the task and its running job
    assert standing.differences == 2
    assert as_plan(standing.decide(10)) == as_plan(decide(FLEET, [ended, b], 10))
