"""Each share's figures for a pools fleet: what it owns, uses, borrows, lends, and what its
waiting tasks ask for. The GPU Quotas view shows them; the manager sends them as metrics
at every cycle."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from airflow_quota_provider import metrics
from airflow_quota_provider.airflow_pools.decide import PoolPlan
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask
from airflow_quota_provider.core.occupancy import Occupancy, occupancy
from airflow_quota_provider.core.share_views import share_view
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.core.usage import held
from airflow_quota_provider.core.views import ShareView


def holders_occupancy(fleet: Fleet, holders: Iterable[PoolTask]) -> dict[str, dict[str, Occupancy]]:
    """Per share and unit, who holds what, from the tasks holding slots."""
    shares = fleet.shares
    usage = held((shares[t.pool][0], {shares[t.pool][1]: t.slots}) for t in holders)
    return occupancy(fleet.config, usage)


def share_views(
    fleet: Fleet,
    table: Mapping[str, Mapping[str, Occupancy]],
    holders: Sequence[PoolTask],
    waiting: Iterable[PoolTask],
) -> list[ShareView]:
    """Every share's record: its occupancy, its holders and its waiting tasks' demands."""
    running: dict[str, int] = {}
    for task in holders:
        share = fleet.shares[task.pool][0]
        running[share] = running.get(share, 0) + 1
    wanted: dict[str, list[Mapping[str, int]]] = {}
    for task in waiting:
        share, unit = fleet.shares[task.pool]
        wanted.setdefault(share, []).append({unit: task.slots})
    return [
        share_view(
            fleet.config, share, table, running.get(share.name, 0), wanted.get(share.name, [])
        )
        for share in fleet.config.shares
    ]


def fleet_gauges(
    fleet: Fleet, tasks: Sequence[PoolTask], plan: PoolPlan
) -> Iterator[metrics.Gauge]:
    """The fleet's gauges after a cycle: holders as Airflow shows them, every task still
    scheduled (those admitted this cycle included) as waiting."""
    managed = [t for t in tasks if t.pool in fleet.shares]
    holders = [t for t in managed if t.state.holds]
    waiting = scheduled(plan, {t.key: t for t in managed})
    shares = share_views(fleet, holders_occupancy(fleet, holders), holders, waiting)
    return metrics.fleet_gauges(fleet.config.job_queue, fleet.config.units, shares)


def scheduled(plan: PoolPlan, tasks: Mapping[TaskKey, PoolTask]) -> list[PoolTask]:
    """The tasks still waiting for a slot: those admitted this cycle first, then the rest
    in dispatch order."""
    return [tasks[start.key] for start in plan.start] + [tasks[key] for key in plan.waiting]
