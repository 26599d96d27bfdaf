"""The Airflow pools backend: quota shares for any Airflow task, through Airflow pools.

Each (share, unit) of a quota config is one Airflow pool (:mod:`.fleet`, :mod:`.pools`);
the pure decision step (:mod:`.decide`, its state kept between cycles in
:mod:`.standing`) says what to admit and whom to preempt; Airflow's public REST API
is reached through one gateway (:mod:`.gateway`, :mod:`.rest`, login in
:mod:`.connection`); the backend's own database (:mod:`.store`, :mod:`.schema`,
:mod:`.database`) holds preemptions, decisions and heartbeats (:mod:`.heartbeat`,
:mod:`.health`). The daemon that runs it all is
:mod:`~airflow_quota_provider.pool_manager`.
"""

from __future__ import annotations

import os
from pathlib import Path

DATABASE_FILE = "airflow-quota-pool-manager.db"
"""The manager's SQLite file in Airflow's home, unless ``--database`` names a database."""


def airflow_home() -> Path:
    """Airflow's home as Airflow finds it: ``$AIRFLOW_HOME``, else ``~/airflow``."""
    home = os.environ.get("AIRFLOW_HOME") or "~/airflow"
    return Path(os.path.expanduser(os.path.expandvars(home))).absolute()


def default_database_url() -> str:
    """The manager's own database unless ``--database`` names one:
    ``sqlite:///$AIRFLOW_HOME/airflow-quota-pool-manager.db``, the same file whichever
    folder the manager, ``status``, ``explain`` or ``events`` run from."""
    return f"sqlite:///{airflow_home() / DATABASE_FILE}"


DEFAULT_DATABASE_URL = default_database_url()
""":func:`default_database_url` when this package was imported (for settings read once,
such as the api-server's ``[quota_provider] view_pool_manager_database``)."""

DEFAULT_API_CONN_ID = "airflow_api_default"
"""The Airflow connection to the api-server (URL and user) unless one is named."""
