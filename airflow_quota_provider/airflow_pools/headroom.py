"""What a share of a pools fleet could start now, for the capacity sensor and its trigger.

The fleet's capacity and shares come from its quota config file; what each
share holds, from the task instances of the managed pools, read from
Airflow's REST API as the pool manager reads them (a restarting task still
holds its slots until its process is gone).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook

from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID
from airflow_quota_provider.airflow_pools.decide import running_jobs
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.headroom import headroom
from airflow_quota_provider.core.model import Backend, QueueConfig
from airflow_quota_provider.core.usage import usage_of
from airflow_quota_provider.exceptions import ConfigError, Problem
from airflow_quota_provider.headroom_source import HeadroomSource

if TYPE_CHECKING:
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, ApiConnection


def fleet_headroom(
    fleet: Fleet, tasks: Iterable[PoolTask], share: str, now: float
) -> dict[str, int]:
    """Units ``share`` could start now, given the task instances of the fleet's pools."""
    holders = [task for task in tasks if task.pool in fleet.shares and task.state.holds]
    usage = usage_of(running_jobs(fleet, holders, now, {}))
    return headroom(fleet.config, usage, share)


def pools_fleet(path: str) -> Fleet:
    """The pools fleet of the quota config at ``path``; :class:`ConfigError` if the file is
    not a valid config or its backend is not ``airflow_pools``."""
    config = load_config(path)
    if config.backend is not Backend.AIRFLOW_POOLS:
        message = (
            f"fleet_config needs a config with backend: {Backend.AIRFLOW_POOLS.value}; this "
            f"one's backend is {config.backend.value}: give its job queue as "
            f"job_queue={config.job_queue!r} instead"
        )
        raise ConfigError([Problem("backend", message)], path)
    return Fleet.of(config)


class PoolsHeadroom(HeadroomSource):
    """A pools fleet: its config file, and its pools' task instances from Airflow's REST API.

    The file is read once, the connection when the first headroom is asked for in a
    worker, or by :meth:`prepare` in the triggerer. The REST client (urllib3) is imported
    only then too, not while Airflow imports the trigger on the triggerer's event loop.

    :param fleet_config: the path of the quota config (``backend: airflow_pools``).
    :param airflow_api_conn_id: the Airflow connection to the api-server: its URL and a
        user that may read task instances (``http://USER:PASSWORD@HOST:PORT``).
    """

    backend = Backend.AIRFLOW_POOLS

    def __init__(
        self, fleet_config: str, *, airflow_api_conn_id: str = DEFAULT_API_CONN_ID
    ) -> None:
        self.fleet_config = fleet_config
        self.airflow_api_conn_id = airflow_api_conn_id
        self._gateway: AirflowGateway | None = None

    @cached_property
    def fleet(self) -> Fleet:
        return pools_fleet(self.fleet_config)

    @property
    def gateway(self) -> AirflowGateway:
        if self._gateway is None:
            try:
                conn = BaseHook.get_connection(self.airflow_api_conn_id)
            except AirflowNotFoundException:
                raise self._missing() from None
            self._gateway = self._gateway_of(conn)
        return self._gateway

    async def prepare(self) -> None:
        from airflow_quota_provider.hooks.connections import get_connection

        if self._gateway is None:
            try:
                conn = await get_connection(self.airflow_api_conn_id)
            except AirflowNotFoundException:
                raise self._missing() from None
            self._gateway = await asyncio.to_thread(self._gateway_of, conn)

    def _gateway_of(self, conn: ApiConnection) -> AirflowGateway:
        from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, api_of

        return AirflowGateway(*api_of(conn, self.airflow_api_conn_id))

    def _missing(self) -> AirflowNotFoundException:
        conn_id = self.airflow_api_conn_id
        return AirflowNotFoundException(
            f"no Airflow connection {conn_id!r} (airflow_api_conn_id) to read the pools' "
            f"task instances with: define it, e.g. "
            f"AIRFLOW_CONN_{conn_id.upper()}=http://USER:PASSWORD@HOST:PORT, as a user "
            "that may read task instances"
        )

    def config(self) -> QueueConfig:
        return self.fleet.config

    def headroom(self, quota_share: str) -> dict[str, int]:
        tasks = self.gateway.task_instances(self.fleet)
        return fleet_headroom(self.fleet, tasks, quota_share, time.time())

    def serialize(self) -> dict[str, Any]:
        return {"fleet_config": self.fleet_config, "airflow_api_conn_id": self.airflow_api_conn_id}
