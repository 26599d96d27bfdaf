"""One read of a pools fleet and the core's decision for it, as every cycle of the
manager makes it and as the GPU Quotas view shows it (so the view gives the manager's
own reasons).

With external work (:mod:`~airflow_quota_provider.airflow_pools.external`), a recent
victim whose work outside Airflow still runs holds its slots as a task being stopped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from airflow_quota_provider.airflow_pools.decide import PoolPlan, decide
from airflow_quota_provider.airflow_pools.external import ExternalWork, Victim
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
from airflow_quota_provider.airflow_pools.standing import Standing
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.task_mirror import TaskMirror
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.task_key import TaskKey

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Observed:
    """The fleet as Airflow shows it now, with what the core decides for it."""

    tasks: list[PoolTask]
    preemptions: dict[TaskKey, int]
    plan: PoolPlan
    read: list[PoolTask]
    """The task instances as Airflow shows them (``tasks`` adds what external work holds)."""


def observe(
    fleet: Fleet,
    gateway: AirflowGateway,
    store: Store,
    now: float,
    external: ExternalWork | None = None,
    standing: Standing | None = None,
    *,
    heal: bool = False,
    mirror: TaskMirror | None = None,
) -> Observed:
    """Read the managed pools' task instances and decide for them, as every cycle does
    (and the GPU Quotas view, so it shows the manager's own reasons).

    With ``external``, a recent victim whose external work still runs holds its slots
    as a task being stopped (see :mod:`~airflow_quota_provider.airflow_pools.external`).
    With ``standing``, the state kept between cycles takes what changed and decides
    (with ``heal``, it is then rebuilt from what was read, saying what differed);
    without, the state is built from what was read. With ``mirror``, only what changed
    since the last read is read (everything when healing).
    """
    read = gateway.task_instances(fleet) if mirror is None else mirror.read(fleet, full=heal)
    tasks = read
    if external is not None:
        tasks = _held_by_external_work(fleet, read, store, external, now)
    preemptions = store.preemptions(task.key for task in tasks)
    if standing is None:
        return Observed(tasks, preemptions, decide(fleet, tasks, now, preemptions), read)
    standing.update(tasks, preemptions)
    if heal:
        standing.heal(tasks, preemptions, now)
    return Observed(tasks, preemptions, standing.decide(now), read)


EXTERNAL_WATCH_SECONDS = 86_400.0
"""How long after a preemption its victim's external work is watched for."""


def _held_by_external_work(
    fleet: Fleet, tasks: list[PoolTask], store: Store, external: ExternalWork, now: float
) -> list[PoolTask]:
    rows = [
        row
        for row in store.unreleased(_moment(now - EXTERNAL_WATCH_SECONDS))
        if row.try_number is not None and row.pool in fleet.shares
    ]
    if not rows:
        return tasks
    victims = {row.id: Victim(row.key, row.try_number or 0) for row in rows}
    running = external.running(set(victims.values()))
    # a victim cleared while its try ran (``restarting``) may create its job until its
    # process is gone: no job found yet is no job for good while Airflow shows the try
    trying = {(task.key, task.try_number) for task in tasks if task.state.holds}
    gone = [
        i
        for i, victim in victims.items()
        if victim not in running and (victim.key, victim.try_number) not in trying
    ]
    store.release(gone, _moment(now))
    held = {victim.key: row for row in rows if (victim := victims[row.id]) in running}
    result = []
    for task in tasks:
        row = held.pop(task.key, None)
        if row is not None and not task.state.holds:
            log.info(
                "%s holds %d slots of %s until its external work stops",
                task.key,
                task.slots,
                task.pool,
            )
            task = replace(task, state=TaskState.RESTARTING)
        result.append(task)
    for key, row in held.items():  # cleared, and not even waiting again yet
        result.append(
            PoolTask(
                key,
                row.pool,
                row.slots,
                0,
                0.0,
                TaskState.RESTARTING,
                start_date=row.started.timestamp() if row.started else None,
                try_number=row.try_number or 0,
            )
        )
    return result


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
