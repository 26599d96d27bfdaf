"""How long a pools task runs, from its own history in Airflow: what the forecast needs.

:class:`TaskHistory` reads, per DAG task (``dag_id``, ``task_id``: every run and map
index of it counts), the durations of its last :data:`HISTORY_RUNS` successful task
instances, newest first, through the gateway's REST session (one batch-list call per
task, ``state=success``, ``order_by=-end_date``). Each task's answer is kept
:data:`HISTORY_TTL_SECONDS`; at most :data:`READS_PER_CALL` tasks are read per call,
the rest keep what they had (or have none) until a later call: a fleet's read does not
make a REST call per task every cycle.

:func:`task_durations` (pure) turns those durations into each task's
:class:`~airflow_quota_provider.core.durations.DurationEstimate`: the median of them,
the 10th to 90th percentile as the range
(:func:`~airflow_quota_provider.core.durations.estimate_duration`), with the tries of
the same task now holding capacity counting for what they have run so far; a task
with no successful run gets the stated default, a guess. Airflow's ``duration`` of a
task instance is its last try's, so a try cleared by a preemption does not count.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
from airflow_quota_provider.airflow_pools.rest import GatewayError, path
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.durations import (
    DurationEstimate,
    DurationHistory,
    estimate_duration,
)

HISTORY_RUNS = 20
"""Successful task instances read per DAG task (the newest)."""
HISTORY_TTL_SECONDS = 300.0
"""How long a task's history is kept before it is read again."""
EMPTY_TTL_SECONDS = 30.0
"""How long an empty history (no successful run yet, or a failed read) is kept: the
task's first success is what turns its guessed duration into a forecast, so it is looked
for again sooner."""
READS_PER_CALL = 20
"""At most this many tasks' histories are read per call."""

Task = tuple[str, str]
"""A DAG task: ``(dag_id, task_id)``."""

log = logging.getLogger(__name__)


class TaskHistory:
    """The durations of each DAG task's last successful runs, read from Airflow and kept
    a few minutes.

    :param gateway: the api-server, as the view's or the manager's user (Viewer role).
    :param runs: successful task instances read per task.
    :param ttl: seconds a task's history is kept.
    :param empty_ttl: seconds an empty history is kept.
    :param reads_per_call: tasks read at most per :meth:`durations` call.
    :param clock: monotonic seconds, for the cache.
    """

    def __init__(
        self,
        gateway: AirflowGateway,
        *,
        runs: int = HISTORY_RUNS,
        ttl: float = HISTORY_TTL_SECONDS,
        empty_ttl: float = EMPTY_TTL_SECONDS,
        reads_per_call: int = READS_PER_CALL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.gateway = gateway
        self.runs, self.ttl, self.reads_per_call, self._clock = runs, ttl, reads_per_call, clock
        self.empty_ttl = empty_ttl
        self._kept: dict[Task, tuple[float, tuple[float, ...]]] = {}
        self._lock = threading.Lock()

    def durations(self, tasks: Iterable[Task]) -> dict[Task, tuple[float, ...]]:
        """Seconds each successful run of each task lasted, newest first (empty: none
        known yet)."""
        found: dict[Task, tuple[float, ...]] = {}
        reads = 0
        with self._lock:
            for task in sorted(set(tasks)):
                kept = self._kept.get(task)
                if (kept is None or kept[0] <= self._clock()) and reads < self.reads_per_call:
                    reads += 1
                    runs = self._read(task)
                    kept = (self._clock() + (self.ttl if runs else self.empty_ttl), runs)
                    self._kept[task] = kept
                found[task] = kept[1] if kept is not None else ()
        return found

    def _read(self, task: Task) -> tuple[float, ...]:
        dag_id, task_id = task
        what = f"read the successful runs of {dag_id}.{task_id}"
        body = {
            "dag_ids": [dag_id],
            "task_ids": [task_id],
            "state": ["success"],
            "order_by": "-end_date",
            "page_limit": self.runs,
        }
        route = path("dags", "~", "dagRuns", "~", "taskInstances", "list")
        try:
            answer = self.gateway.rest.call(what, "POST", route, body=body)
            return tuple(_durations(answer["task_instances"]))
        except GatewayError as error:
            # the forecast then guesses for this task; the view itself must still answer
            log.warning("%s", error.kind_and_cause())
        except (KeyError, TypeError) as error:
            log.warning("%s", self.gateway.rest.unreadable(what, error))
        return ()


def _durations(rows: Sequence[Mapping[str, Any]]) -> Iterable[float]:
    for row in rows:
        seconds = row.get("duration")
        if isinstance(seconds, int | float) and seconds >= 0:
            yield float(seconds)


def task_of(task: PoolTask) -> Task:
    return (task.key.dag_id, task.key.task_id)


def task_durations(
    tasks: Iterable[PoolTask], history: Mapping[Task, Sequence[float]], now: float
) -> dict[str, DurationEstimate]:
    """Each waiting or holding task's estimate, by job id (``str(key)``), from its DAG
    task's ``history``; the tries holding capacity at ``now`` count as still running."""
    tasks = [t for t in tasks if t.state.holds or t.state is TaskState.SCHEDULED]
    running: dict[Task, list[float]] = {}
    for task in tasks:
        if task.state.holds and task.start_date is not None:
            running.setdefault(task_of(task), []).append(max(0.0, now - task.start_date))
    histories: dict[Task, DurationHistory] = {}
    estimates: dict[str, DurationEstimate] = {}
    for task in tasks:
        name = task_of(task)
        known = histories.get(name)
        if known is None:
            known = histories[name] = DurationHistory(history.get(name, ()), running.get(name, ()))
        estimates[str(task.key)] = estimate_duration(known)
    return estimates
