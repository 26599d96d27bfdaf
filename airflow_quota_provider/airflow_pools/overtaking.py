"""Tasks Airflow started between two cycles without the manager admitting them.

A pool's open slots are what the manager admitted; but when a holder ends while an
admission is not yet taken up (the pool open), Airflow's scheduler hands its slots at
once to the next task of the pool in its own order, one that fits, though the share's
head (larger) may be owed them. Such a task was waiting at one cycle and holds slots at
the next without having been admitted, while a task of its pool that comes before it
still waits: it overtook that one. :class:`Overtaking` counts them, per pool, so the
operator sees how often it happens (``quota_provider.<fleet>.<share>.unadmitted_starts``
and a warning each). A task that took freed slots in its turn (the one the manager would
have admitted next), or in a tie of Airflow's own order (see :func:`comes_first`), is no
overtaking and is not counted.

Pools are shut between admissions (see
:func:`~airflow_quota_provider.airflow_pools.decide.gated_slots`), so this is rare.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.task_key import TaskKey


def comes_first(task: PoolTask, other: PoolTask) -> bool:
    """Whether Airflow's scheduler hands a pool's slots to ``task`` before ``other``: the
    higher ``priority_weight`` first, then, among equals, the earlier logical date. Tasks
    of one priority whose runs have no logical date (or one date) it orders in no defined
    way: the manager's further order (when the run was due, the task key) is its own, and
    Airflow giving the slots to one rather than another of them is no overtaking."""
    if task.priority_weight != other.priority_weight:
        return task.priority_weight > other.priority_weight
    dated = task.has_logical_date and other.has_logical_date
    return dated and task.run_date < other.run_date


class Overtaking:
    """What the last cycle saw waiting and what the last two cycles admitted."""

    def __init__(self) -> None:
        self._waiting: dict[TaskKey, PoolTask] = {}
        self._admitted: list[set[TaskKey]] = [set(), set()]

    def cycle(self, read: Sequence[PoolTask], admitted: Iterable[TaskKey]) -> list[PoolTask]:
        """The tasks of ``read`` that hold slots though they waited at the last cycle, were
        not admitted by it or the one before, and started before a task of their pool that
        comes first and still waits: they overtook it. (One that took its turn, as the
        manager would have admitted it, is not counted.) Then remember this cycle."""
        allowed = self._admitted[0] | self._admitted[1]
        still_waiting = {task.key for task in read if task.state is TaskState.SCHEDULED}
        overtook = [
            task
            for task in read
            if task.state.counted
            and task.key in self._waiting
            and task.key not in allowed
            and self._skipped(self._waiting[task.key], still_waiting)
        ]
        now_admitted = set(admitted)
        self._admitted = [self._admitted[1], now_admitted]
        self._waiting = {
            task.key: task
            for task in read
            if task.state is TaskState.SCHEDULED and task.key not in now_admitted
        }
        return overtook

    def _skipped(self, started: PoolTask, still_waiting: set[TaskKey]) -> bool:
        return any(
            other.pool == started.pool and comes_first(other, started)
            for key, other in self._waiting.items()
            if key in still_waiting
        )
