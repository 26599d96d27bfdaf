"""What one cycle of the pool manager adds to its fleet's usage history.

Pure: from the task instances a cycle read (and the config it ran), the fleet's
figures (:func:`cycle_figures`, the core's
:func:`~airflow_quota_provider.core.history.figures_of`, so the history counts as the
page's bars do) and the tries that hold their slots (:func:`starts_of`).
:mod:`~airflow_quota_provider.airflow_pools.recording` compares the figures with the
ones last recorded and writes only the changes.

**Who holds what.** A task instance holds its ``pool_slots`` of its pool's unit, for its
pool's share, while it is queued, running, deferred or restarting (cleared, its
process maybe alive: the manager hands its slots to no one until it is gone), as the
manager counts it when it decides. A scheduled one waits for them.

**A start** is a try seen holding its slots; it is recorded once per try. It started
at Airflow's ``start_date`` of the try, or at the cycle that first saw it queued when it
has none yet, whichever is earlier. Its wait began when Airflow scheduled the try
(``scheduled_when``); where Airflow does not say, at the preemption that stopped the
previous try, or for a first try at its run's date; never after the start.
Its attempt is Airflow's try number (1 for the first).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.history import Figures, JobStart, Key, figures_of
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.core.usage import held


def cycle_figures(fleet: Fleet, tasks: Iterable[PoolTask]) -> dict[Key, Figures]:
    """Every key's figures with ``tasks`` (those of other pools are left out) under the
    fleet's config."""
    holding: list[tuple[str, dict[str, int]]] = []
    waiting: list[tuple[str, dict[str, int]]] = []
    for task in tasks:
        owner = fleet.shares.get(task.pool)
        if owner is None:
            continue
        share, unit = owner
        if task.state.holds:
            holding.append((share, {unit: task.slots}))
        elif task.state is TaskState.SCHEDULED:
            waiting.append((share, {unit: task.slots}))
    return figures_of(fleet.config, held(holding), waiting)


def starts_of(
    fleet: Fleet,
    tasks: Iterable[PoolTask],
    at: int,
    recorded: Collection[tuple[str, int]],
    stopped: Mapping[TaskKey, int],
) -> list[JobStart]:
    """The tries of ``tasks`` holding their slots at ``at`` (epoch ms) that are not among
    ``recorded`` (``(job id, try number)``), as starts.

    :param stopped: when each task's latest preemption stopped it (epoch ms), for the
        wait of a try Airflow gives no ``scheduled_when`` for.
    """
    result = []
    for task in tasks:
        owner = fleet.shares.get(task.pool)
        if owner is None or not task.state.counted:
            continue
        job_id, attempt = str(task.key), max(1, task.try_number)
        if (job_id, attempt) in recorded:
            continue
        began = at if task.start_date is None else min(at, round(task.start_date * 1000))
        result.append(
            JobStart(
                at=began,
                share=owner[0],
                job_id=job_id,
                demand={owner[1]: task.slots},
                attempt=attempt,
                queued_since=min(began, _queued_since(task, attempt, stopped)),
            )
        )
    return result


def _queued_since(task: PoolTask, attempt: int, stopped: Mapping[TaskKey, int]) -> int:
    if task.scheduled_at is not None:
        return round(task.scheduled_at * 1000)
    if attempt > 1 and task.key in stopped:
        return stopped[task.key]
    return round(task.run_date * 1000)
