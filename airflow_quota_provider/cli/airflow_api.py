"""The options naming Airflow's API and the pool manager's database, the same in every
command of a pools fleet (``pool-manager``, ``status``, ``explain``, ``events``).

The user: the connection ``--conn-id`` (default ``airflow_api_default``; host,
port, login and password, e.g.
``AIRFLOW_CONN_AIRFLOW_API_DEFAULT=http://manager:secret@api:8080``), or
``--api-url`` and ``--username`` with the password in
``AIRFLOW_QUOTA_API_PASSWORD`` (never on the command line, where ``ps`` shows it).

The database: ``--database``, by default the same file whichever folder a command runs
from (:func:`~airflow_quota_provider.airflow_pools.default_database_url`). Only the
manager creates it; ``status``, ``explain`` and ``events`` read the manager's.
"""

from __future__ import annotations

import argparse

from airflow_quota_provider.airflow_pools import DATABASE_FILE, default_database_url
from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID as DEFAULT_CONN_ID
from airflow_quota_provider.airflow_pools.connection import PASSWORD_VARIABLE, airflow_api

__all__ = [
    "PASSWORD_VARIABLE",
    "add_airflow_api_arguments",
    "add_database_argument",
    "airflow_api",
]


def add_airflow_api_arguments(parser: argparse._ActionsContainer, *, database: bool = True) -> None:
    """The connection options, and ``--database`` unless ``database`` is false."""
    parser.add_argument(
        "--conn-id",
        default=DEFAULT_CONN_ID,
        help=f"Airflow connection to the api-server (default {DEFAULT_CONN_ID})",
    )
    parser.add_argument("--api-url", help="the api-server's URL, instead of a connection")
    parser.add_argument(
        "--username", help=f"the Airflow user, with the password in ${PASSWORD_VARIABLE}"
    )
    if database:
        add_database_argument(parser)


def add_database_argument(parser: argparse._ActionsContainer) -> None:
    """``--database``: the pool manager's, which only the manager creates."""
    default = default_database_url()
    parser.add_argument(
        "--database",
        default=default,
        help="the pool manager's database (SQLAlchemy URL): preemptions, decisions and the "
        "fleet's usage history. The "
        "manager creates it; status, explain, events and usage read the manager's and create "
        f"nothing. Default sqlite:///$AIRFLOW_HOME/{DATABASE_FILE} from any folder, "
        f"$AIRFLOW_HOME being ~/airflow unless set (here {default}); "
        "postgresql://USER:PASSWORD@HOST:PORT/DB for several managers",
    )
