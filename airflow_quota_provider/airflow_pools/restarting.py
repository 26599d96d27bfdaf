"""Tasks left ``restarting``: cleared once more when their process must be long gone.

Clearing a running task sets it ``restarting``; Airflow kills its process and, once
the executor reports the process gone, sends the task back to be scheduled. Airflow
3.0 never takes that last step (apache/airflow#55045, fixed in 3.1): the task stays
``restarting``, its run never ends, and the manager would count its slots as held
for good. A lost executor event (a worker killed with the task) leaves the same on
any release. So a task seen ``restarting`` for :data:`STUCK_AFTER_SECONDS` is cleared
again: a task that does not run goes straight back to be scheduled.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.task_key import TaskKey

STUCK_AFTER_SECONDS = 30.0
"""Far longer than Airflow takes to kill a cleared task's process (its supervisor
learns at its next heartbeat, then escalates from SIGTERM to SIGKILL within seconds)."""


class RestartingWatch:
    """Since when each task has shown ``restarting``, as Airflow reports it."""

    def __init__(self, stuck_after: float = STUCK_AFTER_SECONDS) -> None:
        self.stuck_after = stuck_after
        self._since: dict[TaskKey, float] = {}

    def stuck(self, tasks: Iterable[PoolTask], now: float) -> list[PoolTask]:
        """The tasks ``restarting`` for ``stuck_after`` seconds or more; a task seen in
        another state since starts over."""
        restarting = {task.key: task for task in tasks if task.state is TaskState.RESTARTING}
        self._since = {key: self._since.get(key, now) for key in restarting}
        return [
            task
            for key, task in sorted(restarting.items())
            if now - self._since[key] >= self.stuck_after
        ]

    def cleared(self, key: TaskKey, now: float) -> None:
        """``key`` was cleared again now: it is given as long once more."""
        self._since[key] = now
