"""The task instances kept between cycles and brought up to date by what changed.

The reader here is a table of task instances with the time each last changed, answering
as Airflow's two list routes do (the full read: waiting or holding tasks only; the read
of changes: any state, ``updated_at >= since``). Against real Airflow the same mirror is
driven in ``test_end_to_end.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_quota_provider.airflow_pools.pools import PoolSlots, SlotsInUse
from airflow_quota_provider.airflow_pools.task_mirror import TaskMirror
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.task_key import TaskKey

POOLS = ["quota-a-gpu", "quota-b-gpu"]


class Table:
    """Airflow's task instance table, with each row's ``updated_at`` and the api-server's
    clock (``now``); deleting a row leaves no trace, as in Airflow."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.rows: dict[TaskKey, tuple[PoolTask, float]] = {}
        self.asked: list[tuple[str, float | None]] = []

    def put(self, task: PoolTask, stamped: float | None = None) -> None:
        self.rows[task.key] = (task, self.now if stamped is None else stamped)

    def task_instances_dated(self, pools: Iterable[str]) -> tuple[list[PoolTask], float | None]:
        self.asked.append(("full", None))
        names = set(pools)
        return [t for t, _ in self.rows.values() if t.pool in names and _live(t)], self.now

    def task_instances_changed(
        self, pools: Iterable[str], since: float, at_most: int | None = None
    ) -> tuple[list[PoolTask] | None, float | None]:
        self.asked.append(("changed", since))
        names = set(pools)
        found = [t for t, at in self.rows.values() if t.pool in names and at >= since]
        return (None if at_most is not None and len(found) > at_most else found), self.now

    def pools(self) -> dict[str, PoolSlots]:
        """The pools as Airflow sums their task instances."""
        found = {}
        for name in POOLS:
            tasks = [t for t, _ in self.rows.values() if t.pool == name]

            def held(state: TaskState, tasks: list[PoolTask] = tasks) -> int:
                return sum(t.slots for t in tasks if t.state is state)

            found[name] = PoolSlots(
                name,
                0,
                True,
                None,
                SlotsInUse(
                    held(TaskState.SCHEDULED),
                    held(TaskState.QUEUED),
                    held(TaskState.RUNNING),
                    held(TaskState.DEFERRED),
                ),
            )
        return found


def _live(task: PoolTask) -> bool:
    return task.state is not TaskState.OTHER


def task(name: str, state: TaskState, pool: str = "quota-a-gpu", slots: int = 2) -> PoolTask:
    return PoolTask(TaskKey("d", "r", name), pool, slots, 1, 0.0, state)


def by_key(tasks: Iterable[PoolTask]) -> dict[str, PoolTask]:
    return {str(t.key): t for t in tasks}


def test_after_the_first_read_only_what_changed_is_asked_for_and_ended_tasks_leave() -> None:
    table = Table()
    table.put(task("a", TaskState.RUNNING))
    table.put(task("b", TaskState.SCHEDULED))
    mirror = TaskMirror(table, overlap=30)
    assert by_key(mirror.read(POOLS)) == by_key(table.task_instances_dated(POOLS)[0])

    table.now = 1005.0
    table.put(task("a", TaskState.OTHER))  # ended
    table.put(task("b", TaskState.RUNNING))
    table.put(task("c", TaskState.SCHEDULED, pool="quota-b-gpu"))
    kept = mirror.read(POOLS)

    assert table.asked[-1] == ("changed", 1000.0 - 30)
    assert by_key(kept) == {
        "d/r/b": task("b", TaskState.RUNNING),
        "d/r/c": task("c", TaskState.SCHEDULED, pool="quota-b-gpu"),
    }
    assert (mirror.full_reads, mirror.changed_reads) == (1, 1)
    assert mirror.check(table.pools()) == []


def test_a_change_committed_late_with_an_older_stamp_is_read_within_the_overlap() -> None:
    table = Table()
    mirror = TaskMirror(table, overlap=30)
    mirror.read(POOLS)
    table.now = 1010.0
    # stamped at 990 by a host (or a long transaction), committed only now
    table.put(task("late", TaskState.SCHEDULED), stamped=990.0)
    assert by_key(mirror.read(POOLS)) == {"d/r/late": task("late", TaskState.SCHEDULED)}


def test_a_deleted_task_is_found_by_the_pools_sums_twice_and_read_away_in_full() -> None:
    table = Table()
    table.put(task("gone", TaskState.SCHEDULED))
    mirror = TaskMirror(table)
    mirror.read(POOLS)
    del table.rows[TaskKey("d", "r", "gone")]  # its run deleted: no row changed, none shows

    table.now += 5
    assert by_key(mirror.read(POOLS)) == {"d/r/gone": task("gone", TaskState.SCHEDULED)}
    assert mirror.check(table.pools()) == ["quota-a-gpu"]  # once: maybe a change between reads
    table.now += 5
    mirror.read(POOLS)
    assert mirror.check(table.pools()) == ["quota-a-gpu"]  # twice: the next read is full
    table.now += 5
    assert mirror.read(POOLS) == []
    assert table.asked[-1] == ("full", None)
    assert mirror.check(table.pools()) == []


def test_a_difference_seen_once_is_not_taken_for_a_lost_row() -> None:
    table = Table()
    mirror = TaskMirror(table)
    mirror.read(POOLS)
    table.put(task("new", TaskState.SCHEDULED))  # appeared between the read and the pools
    assert mirror.check(table.pools()) == ["quota-a-gpu"]
    table.now += 5
    mirror.read(POOLS)
    assert mirror.check(table.pools()) == []
    table.now += 5
    mirror.read(POOLS)
    assert [kind for kind, _ in table.asked] == ["full", "changed", "changed"]


def test_a_task_moved_to_an_unmanaged_pool_or_other_pools_asked_for_reads_in_full() -> None:
    table = Table()
    table.put(task("a", TaskState.SCHEDULED))
    mirror = TaskMirror(table)
    mirror.read(POOLS)
    table.now += 5
    table.put(task("a", TaskState.SCHEDULED, pool="default_pool"))  # its DAG's pool edited
    # a read filtered by the managed pools never shows it again
    assert by_key(mirror.read(POOLS)) == {"d/r/a": task("a", TaskState.SCHEDULED)}
    mirror.check(table.pools())
    mirror.read(POOLS)
    mirror.check(table.pools())
    assert mirror.read(POOLS) == []  # the sums differed twice: read in full

    assert mirror.read(["quota-a-gpu"]) == []
    assert table.asked[-1] == ("full", None)


def test_forget_and_full_make_the_next_read_full() -> None:
    table = Table()
    mirror = TaskMirror(table)
    mirror.read(POOLS)
    mirror.read(POOLS, full=True)
    mirror.forget()
    mirror.read(POOLS)
    assert [kind for kind, _ in table.asked] == ["full", "full", "full"]


def test_without_the_api_servers_time_the_managers_clock_is_taken() -> None:
    class Undated(Table):
        def task_instances_dated(self, pools: Iterable[str]) -> tuple[list[PoolTask], float | None]:
            return super().task_instances_dated(pools)[0], None

    table = Undated()
    mirror = TaskMirror(table, overlap=10, clock=lambda: 500.0)
    mirror.read(POOLS)
    mirror.read(POOLS)
    assert table.asked[-1] == ("changed", 490.0)


def test_after_a_burst_of_changes_a_full_read_is_made_instead() -> None:
    table = Table()
    for n in range(1000):
        table.put(task(f"old{n}", TaskState.SCHEDULED, slots=1), stamped=0.0)
    mirror = TaskMirror(table)
    mirror.read(POOLS)
    table.now += 5
    for n in range(600):  # a large mapped task scheduled at once: more than half
        table.put(task(f"new{n}", TaskState.SCHEDULED, slots=1))
    assert len(mirror.read(POOLS)) == 1600
    assert [kind for kind, _ in table.asked] == ["full", "changed", "full"]
    table.now += 5
    table.put(task("one", TaskState.SCHEDULED, slots=1))
    assert len(mirror.read(POOLS)) == 1601  # 601 changed within the overlap: fewer than half
    assert table.asked[-1][0] == "changed"
