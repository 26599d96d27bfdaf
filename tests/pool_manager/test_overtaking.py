"""Counting the tasks Airflow starts between cycles without the manager admitting them."""

from __future__ import annotations

from airflow_quota_provider.airflow_pools.overtaking import Overtaking
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.task_key import TaskKey

HEAD = TaskKey("big", "r", "train")
SMALL = TaskKey("small", "r", "train")
ADMITTED = TaskKey("admitted", "r", "train")


def task(
    key: TaskKey, state: TaskState, *, weight: int | None = None, dated: bool = True
) -> PoolTask:
    """The head comes first by priority; the others tie (one run, one priority)."""
    priority = (10 if key == HEAD else 1) if weight is None else weight
    return PoolTask(key, "quota-a-gpu", 2, priority, 0.0, state, has_logical_date=dated)


def test_a_waiting_task_that_holds_slots_at_the_next_cycle_unadmitted_is_counted() -> None:
    watch = Overtaking()
    waiting = [task(k, TaskState.SCHEDULED) for k in (HEAD, SMALL, ADMITTED)]
    assert watch.cycle(waiting, [ADMITTED]) == []
    # a holder ended between the cycles: Airflow gave its 2 slots to SMALL, not to HEAD (6)
    later = [
        task(HEAD, TaskState.SCHEDULED),
        task(SMALL, TaskState.RUNNING),
        task(ADMITTED, TaskState.RUNNING),
    ]
    assert [t.key for t in watch.cycle(later, [])] == [SMALL]
    assert watch.cycle(later, []) == []  # counted once: it no longer waits


def test_a_task_admitted_a_cycle_ago_that_starts_late_is_not_counted() -> None:
    watch = Overtaking()
    watch.cycle([task(ADMITTED, TaskState.SCHEDULED)], [ADMITTED])
    watch.cycle([task(ADMITTED, TaskState.SCHEDULED)], [])  # not queued yet by the scheduler
    assert watch.cycle([task(ADMITTED, TaskState.QUEUED)], []) == []


def test_tasks_already_running_when_the_manager_starts_are_not_counted() -> None:
    assert Overtaking().cycle([task(SMALL, TaskState.RUNNING)], []) == []


def test_a_task_that_took_freed_slots_in_its_turn_is_no_overtaking() -> None:
    """The head started unadmitted on slots a holder freed: what the manager would do."""
    watch = Overtaking()
    watch.cycle([task(HEAD, TaskState.SCHEDULED), task(SMALL, TaskState.SCHEDULED)], [])
    assert watch.cycle([task(HEAD, TaskState.RUNNING), task(SMALL, TaskState.SCHEDULED)], []) == []


def test_a_tie_in_airflows_order_is_no_overtaking() -> None:
    """Airflow orders one priority's tasks by their run's logical date and nothing more:
    tasks of runs without one (or of one run) it starts in any order."""
    first, second = TaskKey("train", "run-1", "t"), TaskKey("train", "run-2", "t")

    def tie(dated: bool) -> list[PoolTask]:
        watch = Overtaking()
        runs = [(first, 0.0), (second, 5.0)]
        watch.cycle(
            [
                PoolTask(k, "quota-a-gpu", 2, 5, due, TaskState.SCHEDULED, has_logical_date=dated)
                for k, due in runs
            ],
            [],
        )
        states = {first: TaskState.SCHEDULED, second: TaskState.RUNNING}
        return watch.cycle(
            [
                PoolTask(k, "quota-a-gpu", 2, 5, due, states[k], has_logical_date=dated)
                for k, due in runs
            ],
            [],
        )

    assert tie(dated=False) == [], "no logical dates: Airflow's order does not rank them"
    assert [t.key for t in tie(dated=True)] == [second], "the earlier logical date comes first"
