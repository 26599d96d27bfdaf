"""The core's state of a fleet's pools, kept between cycles and changed, not rebuilt.

:func:`~airflow_quota_provider.airflow_pools.decide.decide` builds the core's queue
state from every task instance at every cycle: at 10,000 task instances most of a
cycle is spent making the same 9,000 waiting jobs and sorting them again. A
:class:`Standing` keeps that state and takes Airflow's changes instead (tasks that
appeared, moved or ended, preemption counts that grew); each cycle settles a copy,
so what the cycle decides is never taken for done before Airflow shows it.

- a **scheduled** task is a waiting job in its share's queue (or a refusal, if it
  could never fit), added and removed one at a time;
- the **holders** of a share become its running jobs again only when one of them
  changed (whether a holder borrows depends on those that started before it), or
  when one has no start date yet (the core takes ``now`` for it, so it changes with
  the clock).

Airflow stays the source of truth: a full rebuild happens when the manager starts,
after it takes the lease over and periodically (:meth:`Standing.heal`), and any
difference between the kept state and the rebuilt one is logged and counted (there
should be none). The decisions are those of ``decide`` over the same tasks: the
property tests compare the two after random sequences of changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from airflow_quota_provider.airflow_pools.decide import (
    PoolPlan,
    Refusal,
    refusal_of,
    running_jobs,
    settled_plan,
    waiting_jobs,
)
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import QueueState
from airflow_quota_provider.core.task_key import TaskKey

log = logging.getLogger(__name__)


class Standing:
    """The task instances of ``fleet``'s pools as the core's jobs, kept between cycles.

    :param fleet: the pools and the shares they stand for; a new fleet (config
        reloaded) needs a new ``Standing``.
    """

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.differences = 0
        """How many differences the heals found so far (each one is logged)."""
        self._tasks: dict[str, PoolTask] = {}
        self._preemptions: dict[TaskKey, int] = {}
        self._state = QueueState(fleet.config)
        self._refused: dict[str, Refusal] = {}
        self._holders: dict[str, dict[str, PoolTask]] = {}
        """Per share, the tasks that hold capacity, by job id."""
        self._stale: set[str] = set()
        """Shares whose running jobs are made again at the next cycle."""
        self._fits: dict[tuple[str, int], bool] = {}

    @classmethod
    def of(
        cls,
        fleet: Fleet,
        tasks: Iterable[PoolTask],
        preemptions: Mapping[TaskKey, int] | None = None,
    ) -> Standing:
        """The state built from every task instance (a full rebuild)."""
        standing = cls(fleet)
        standing.change(tasks, (), preemptions or {})
        return standing

    # -- changes ----------------------------------------------------------------

    def update(
        self, tasks: Iterable[PoolTask], preemptions: Mapping[TaskKey, int] | None = None
    ) -> int:
        """Take every task instance of the managed pools as read now (those not among them
        are gone); how many changed."""
        known = self._tasks
        seen: set[str] = set()
        changed = []
        for task in tasks:
            job_id = str(task.key)
            seen.add(job_id)
            if known.get(job_id) != task:
                changed.append(task)
        gone = [known[job_id].key for job_id in known.keys() - seen]
        self.change(changed, gone, preemptions)
        return len(changed) + len(gone)

    def change(
        self,
        changed: Iterable[PoolTask],
        gone: Iterable[TaskKey] = (),
        preemptions: Mapping[TaskKey, int] | None = None,
    ) -> None:
        """Take Airflow's changes: task instances that appeared or changed (in any state or
        pool, managed or not: one that ended or moved out is forgotten), those ``gone``
        (deleted, or read no more), and, with
        ``preemptions``, every task's preemption count now."""
        for key in gone:
            self._remove(str(key))
        scheduled = []
        for task in changed:
            job_id = str(task.key)
            self._remove(job_id)
            # a task that ended (or left the managed pools) is forgotten, not kept
            if task.pool in self.fleet.shares and task.state is not TaskState.OTHER:
                self._tasks[job_id] = task
                if task.state is TaskState.SCHEDULED:
                    scheduled.append(task)
                else:
                    self._hold(job_id, task)
        if preemptions is not None:
            scheduled += self._count_preemptions(preemptions)
        self._wait(scheduled)

    def _count_preemptions(self, preemptions: Mapping[TaskKey, int]) -> list[PoolTask]:
        """Take the preemption counts; the scheduled tasks whose count changed (taken out
        of their queue to be put back with it)."""
        old, self._preemptions = self._preemptions, dict(preemptions)
        again = []
        for key in old.keys() | preemptions.keys():
            if old.get(key, 0) == preemptions.get(key, 0):
                continue
            task = self._tasks.get(str(key))
            if task is None:
                continue
            if task.state.holds:
                self._stale.add(self.fleet.shares[task.pool][0])
            elif self._state.waiting_job(str(key)) is not None:
                self._state.remove_waiting(str(key))
                again.append(task)
        return again

    def _wait(self, scheduled: list[PoolTask]) -> None:
        fitting = []
        for task in scheduled:
            refusal = refusal_of(self.fleet, task, self._fits)
            if refusal is None:
                fitting.append(task)
            else:
                self._refused[str(task.key)] = refusal
        for job in waiting_jobs(self.fleet, fitting, self._preemptions):
            self._state.add_waiting(job)

    def _hold(self, job_id: str, task: PoolTask) -> None:
        share = self.fleet.shares[task.pool][0]
        self._holders.setdefault(share, {})[job_id] = task
        self._stale.add(share)

    def _remove(self, job_id: str) -> None:
        task = self._tasks.pop(job_id, None)
        if task is None:
            return
        if self._refused.pop(job_id, None) is not None:
            return
        if self._state.waiting_job(job_id) is not None:
            self._state.remove_waiting(job_id)
        elif task.state.holds:
            share = self.fleet.shares[task.pool][0]
            del self._holders[share][job_id]
            self._stale.add(share)
            if self._state.running_job(job_id) is not None:
                self._state.remove_running(job_id)

    # -- cycles -----------------------------------------------------------------

    def decide(self, now: float) -> PoolPlan:
        """The cycle's plan at ``now``, as ``decide`` would make it from the same tasks."""
        self._refresh(now)
        holders = [task for share in self._holders.values() for task in share.values()]
        return settled_plan(
            self.fleet,
            self._state.copy(),
            dict(self._tasks),
            holders,
            self._refused.values(),
            now,
        )

    def _refresh(self, now: float) -> None:
        """Make the running jobs of the stale shares again."""
        for share in self._stale:
            for job in list(self._state.running_of(share)):
                self._state.remove_running(job.id)
            holders = list(self._holders.get(share, {}).values())
            for job in running_jobs(self.fleet, holders, now, self._preemptions):
                self._state.add_running(job)
        # a holder without a start date starts at ``now`` in the core: made again each cycle
        self._stale = {
            share
            for share, holders in self._holders.items()
            if any(task.start_date is None for task in holders.values())
        }

    def heal(
        self, tasks: Iterable[PoolTask], preemptions: Mapping[TaskKey, int], now: float
    ) -> int:
        """Rebuild from every task instance read now and take the rebuilt state; log each
        difference from the kept one and return how many there were. Once the kept state
        has taken the changes up to this read there should be none: each is a change
        missed or a mistake of its own."""
        rebuilt = Standing.of(self.fleet, tasks, preemptions)
        found = self.compare(rebuilt, now)
        for difference in found:
            log.warning("the pool manager's kept state differed from Airflow: %s", difference)
        self.differences += len(found)
        self._tasks, self._preemptions = rebuilt._tasks, rebuilt._preemptions
        self._state, self._refused = rebuilt._state, rebuilt._refused
        self._holders, self._stale = rebuilt._holders, rebuilt._stale
        return len(found)

    def compare(self, other: Standing, now: float) -> list[str]:
        """What differs between this state and ``other`` (of the same fleet) at ``now``."""
        self._refresh(now)
        other._refresh(now)
        found = _differ("task", self._tasks, other._tasks)
        found += _differ("refusal", self._refused, other._refused)
        found += _differ(
            "waiting job",
            {job.id: job for job in self._state.waiting()},
            {job.id: job for job in other._state.waiting()},
        )
        found += _differ(
            "running job",
            {job.id: job for job in self._state.running()},
            {job.id: job for job in other._state.running()},
        )
        for share in {s.name for s in self.fleet.config.shares}:
            if self._state.queue(share) != other._state.queue(share):
                found.append(f"the queue of share {share}")
        return found


def _differ(what: str, kept: Mapping[str, object], rebuilt: Mapping[str, object]) -> list[str]:
    return [
        f"{what} {key}: kept {kept.get(key)!r}, rebuilt {rebuilt.get(key)!r}"
        for key in sorted(kept.keys() | rebuilt.keys())
        if kept.get(key) != rebuilt.get(key)
    ]
