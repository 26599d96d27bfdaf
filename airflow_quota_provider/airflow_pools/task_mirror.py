"""The task instances of a fleet's pools as Airflow last showed them, kept between cycles
and brought up to date by reading only what Airflow changed since.

A full read lists every task instance of the managed pools that waits for or holds a
slot (the batch list route, pages of 1,000). At thousands of task instances most of a
steady cycle went into the api-server serializing the same rows again; a
:class:`TaskMirror` keeps them and asks, at the next cycle, only for the task
instances of those pools that Airflow changed since the last read began, in any
state, so that one that ended or was cleared shows as such (GET ``taskInstances``
with ``updated_at_gte``, the only list route that filters by it, on every Airflow 3
line from 3.0.0).

What such a read cannot see, and how it is caught:

- **Late commits and clocks.** Airflow stamps ``updated_at`` when a change is written,
  on the clock of the host that writes it, and it shows once committed. The next read
  asks from :data:`OVERLAP_SECONDS` before the api-server's own time (its HTTP ``Date``)
  when the last read began, so a change committed up to that long after it was stamped,
  or stamped by a host that far behind the api-server, is still read. A change of state
  or size missed beyond that leaves the pool's sums differing from Airflow's (below).
- **Rows deleted or moved to another pool** (a DAG run deleted, a task's pool edited)
  show in no filtered read. After each read the manager compares, per pool, the slots
  the mirror's tasks use in each state with Airflow's own sums (:meth:`TaskMirror.check`,
  from the pools it reads anyway); a pool that differs at two checks in a row makes the
  next read a full one. The manager also reads everything at start, after taking the
  lease over, on a new config and at every heal of its kept state.
- Changes written without the ORM (raw SQL on Airflow's database) do not move
  ``updated_at``: the counts check and the heals are what find those.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from airflow_quota_provider.airflow_pools.pools import PoolSlots, SlotsInUse
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.task_key import TaskKey

log = logging.getLogger(__name__)

OVERLAP_SECONDS = 10.0
"""How far before the last read's start the next read asks for changes."""

CHANGED_AT_MOST = 0.5
"""A read of changes gives way to a full read when more than this share of the tasks
kept changed (and more than :data:`CHANGED_ROWS_FREE`): after a burst (a large mapped
task scheduled, a backfill), rows changed within the overlap are read again for a few
cycles, and a full read of the same rows costs less."""
CHANGED_ROWS_FREE = 200


class TaskReader(Protocol):
    """The two reads of task instances the gateway offers."""

    def task_instances_dated(self, pools: Iterable[str]) -> tuple[list[PoolTask], float | None]: ...

    def task_instances_changed(
        self, pools: Iterable[str], since: float, at_most: int | None = None
    ) -> tuple[list[PoolTask] | None, float | None]: ...


class TaskMirror:
    """The task instances of some pools, read whole once and then by their changes.

    :param reader: the gateway.
    :param overlap: seconds before the last read's start that the next read asks from.
    :param clock: the time to take when the api-server sends no ``Date``.
    """

    def __init__(
        self,
        reader: TaskReader,
        *,
        overlap: float = OVERLAP_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.reader = reader
        self.overlap = overlap
        self.clock = clock
        self.full_reads = 0
        self.changed_reads = 0
        self._tasks: dict[TaskKey, PoolTask] = {}
        self._pools: tuple[str, ...] = ()
        self._since: float | None = None
        """From when the next read asks for changes; ``None``: the next read is full."""
        self._differed: set[str] = set()
        """Pools whose sums differed from Airflow's at the last check."""

    def read(self, pools: Iterable[str], *, full: bool = False) -> list[PoolTask]:
        """Every task instance of ``pools`` that waits for or holds a slot, as Airflow shows
        it now: read whole if ``full``, on the first read, or when the pools changed, else
        brought up to date with what changed since the last read."""
        names = tuple(sorted(pools))
        changed: list[PoolTask] | None = None
        if not (full or self._since is None or names != self._pools):
            at_most = max(CHANGED_ROWS_FREE, int(len(self._tasks) * CHANGED_AT_MOST))
            changed, began = self.reader.task_instances_changed(names, self._since, at_most)
        if changed is None:
            tasks, began = self.reader.task_instances_dated(names)
            self._tasks = {task.key: task for task in tasks}
            self.full_reads += 1
        else:
            for task in changed:
                if task.state is TaskState.OTHER or task.pool not in names:
                    self._tasks.pop(task.key, None)  # ended, or no longer in these pools
                else:
                    self._tasks[task.key] = task
            self.changed_reads += 1
        self._pools = names
        self._since = (self.clock() if began is None else began) - self.overlap
        return list(self._tasks.values())

    def forget(self) -> None:
        """Read everything at the next read."""
        self._since = None

    def check(self, pools: Mapping[str, PoolSlots]) -> list[str]:
        """Compare what the mirror's tasks use in each of its pools with Airflow's sums;
        the pools that differ. A pool that differs at two checks in a row (not a change
        between the two reads, then) makes the next read a full one."""
        found = _in_use(self._tasks.values())
        differ = []
        for name in self._pools:
            theirs = pools[name].in_use if name in pools else None
            if theirs is not None and found.get(name, SlotsInUse()) != theirs:
                differ.append(name)
        again = self._differed.intersection(differ)
        if again:
            log.info(
                "the task instances kept for pool(s) %s differ from Airflow's sums twice in a "
                "row (deleted or moved since they were read): reading all of them next cycle",
                ", ".join(sorted(again)),
            )
            self.forget()
            self._differed = set()
        else:
            self._differed = set(differ)
        return differ


def _in_use(tasks: Iterable[PoolTask]) -> dict[str, SlotsInUse]:
    sums: dict[str, Counter[TaskState]] = {}
    for task in tasks:
        sums.setdefault(task.pool, Counter())[task.state] += task.slots
    return {
        pool: SlotsInUse(
            scheduled=counts[TaskState.SCHEDULED],
            queued=counts[TaskState.QUEUED],
            running=counts[TaskState.RUNNING],
            deferred=counts[TaskState.DEFERRED],
        )
        for pool, counts in sums.items()
    }
