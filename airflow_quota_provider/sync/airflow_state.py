"""Read what Airflow has now for a pools fleet: every pool, and the task instances that
wait for or hold a slot in the fleet's pools and in those :func:`stale_pools` would delete.

Through :class:`~airflow_quota_provider.airflow_pools.gateway.AirflowGateway`
(a few REST calls); a failed call raises its
:class:`~airflow_quota_provider.airflow_pools.gateway.GatewayError`.
"""

from __future__ import annotations

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
from airflow_quota_provider.sync.pool_plan import PoolsState, stale_pools


def read_pools_state(gateway: AirflowGateway, fleet: Fleet) -> PoolsState:
    pools = gateway.pools()
    tasks = gateway.task_instances([*fleet, *stale_pools(fleet, pools)])
    return PoolsState(pools, tasks)
