"""The Airflow plugin: the GPU Quotas app at ``/quota`` and its entry in the UI's navigation.

Registered through the ``airflow.plugins`` entry point, so installing the
package is all it takes. Settings (``[quota_provider]``): ``view_aws_conn_id``
(default ``aws_default``; a missing connection means boto3's usual
environment, e.g. ``AWS_ENDPOINT_URL``), ``view_region_name`` and
``view_cache_seconds`` (default 15) and ``view_sample_seconds`` (default 60; how
often the api-server reads every queue, setting the metrics' gauges; 0 = only when
someone looks).

A pools fleet instead: ``view_fleet_config`` names its quota config (``backend:
airflow_pools``); the page then reads Airflow's own REST API as the user of
``view_api_conn_id`` (default ``airflow_api_default``) and the pool manager's
database ``view_pool_manager_database`` (its ``--database``).

Who may see it: a logged-in Airflow user whom the auth manager allows ``GET`` on
the custom view ``GPU Quotas`` (:data:`RESOURCE_NAME`); with FAB that is the
permission "can read on GPU Quotas", with SimpleAuthManager every role has it.

Airflow 3.0 serves the app but has no plugin entries in its navigation (open
``/quota/``); Airflow 2 has no FastAPI API server: there the plugin registers
nothing, so installing the provider adds no plugin import error.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin
from airflow.providers.common.compat.sdk import conf

from airflow_quota_provider.exceptions import ViewError
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.versions import airflow_at_least
from airflow_quota_provider.view import RESOURCE_NAME
from airflow_quota_provider.view.backend import DEFAULT_TTL, BatchBackend, QuotaBackend

URL_PREFIX = "/quota"
SECTION = "quota_provider"


def backend_from_config() -> QuotaBackend:
    """The backend the deployment's ``[quota_provider]`` settings describe."""
    fleet_config = conf.get(SECTION, "view_fleet_config", fallback=None)
    if fleet_config:
        return _pools_backend(fleet_config)
    conn_id = conf.get(SECTION, "view_aws_conn_id", fallback="aws_default")
    region = conf.get(SECTION, "view_region_name", fallback=None) or None
    ttl = conf.getfloat(SECTION, "view_cache_seconds", fallback=DEFAULT_TTL)
    return BatchBackend(lambda: BatchQuotaHook(aws_conn_id=conn_id, region_name=region), ttl=ttl)


def _pools_backend(path: str) -> QuotaBackend:
    from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID, DEFAULT_DATABASE_URL
    from airflow_quota_provider.airflow_pools.connection import airflow_api
    from airflow_quota_provider.airflow_pools.database import MissingDatabase
    from airflow_quota_provider.airflow_pools.fleet import Fleet
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
    from airflow_quota_provider.airflow_pools.store import Store
    from airflow_quota_provider.config_file import load_config
    from airflow_quota_provider.view.pools_source import PoolsBackend

    conn_id = conf.get(SECTION, "view_api_conn_id", fallback=DEFAULT_API_CONN_ID)
    database = conf.get(SECTION, "view_pool_manager_database", fallback=DEFAULT_DATABASE_URL)
    ttl = conf.getfloat(SECTION, "view_cache_seconds", fallback=DEFAULT_TTL)
    url, credentials = airflow_api(conn_id)
    fleet = Fleet.of(load_config(path))
    try:
        store = Store(database, create=False)
    except MissingDatabase as error:
        raise ViewError(
            f"{error}; set [quota_provider] view_pool_manager_database to the pool manager's "
            "--database"
        ) from None
    return PoolsBackend(fleet, AirflowGateway(url, credentials), store, ttl=ttl, config_path=path)


def _apps() -> list[dict[str, Any]]:
    if not airflow_at_least("3.0"):
        return []
    from airflow_quota_provider.view.access import may_read_quotas
    from airflow_quota_provider.view.api import create_app

    app = create_app(
        backend_from_config,
        may_read_quotas,
        sample_every=conf.getfloat(SECTION, "view_sample_seconds", fallback=60.0),
    )
    return [{"app": app, "url_prefix": URL_PREFIX, "name": RESOURCE_NAME}]


class QuotaViewPlugin(AirflowPlugin):
    """GPU Quotas: who owns, uses, borrows and lends how much, what waits and why."""

    name = "gpu_quotas"
    fastapi_apps = _apps()
    external_views = [  # noqa: RUF012 - AirflowPlugin declares these as plain lists
        {
            "name": "GPU Quotas",
            "href": "quota/",
            "destination": "nav",
            "url_route": "gpu-quotas",
        }
    ]
