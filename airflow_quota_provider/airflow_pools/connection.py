"""Who the pool manager's commands and the view log in to Airflow's API as: the
connection ``conn_id`` or an explicit URL and user, the password from
``$AIRFLOW_QUOTA_API_PASSWORD`` (never from the command line, where ``ps`` shows it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID as DEFAULT_CONN_ID

if TYPE_CHECKING:
    from airflow_quota_provider.airflow_pools.gateway import Credentials

PASSWORD_VARIABLE = "AIRFLOW_QUOTA_API_PASSWORD"


def airflow_api(
    conn_id: str = DEFAULT_CONN_ID, api_url: str | None = None, username: str | None = None
) -> tuple[str, Credentials]:
    """The api-server's URL and the user: ``api_url`` and ``username`` (password from the
    environment) or the connection ``conn_id``; ``ValueError`` saying what is missing."""
    from airflow_quota_provider.airflow_pools.gateway import Credentials, api_of

    if api_url:
        if not username:
            raise ValueError("--api-url needs --username (and the password in the environment)")
        password = os.environ.get(PASSWORD_VARIABLE)
        if password is None:
            raise ValueError(
                f"${PASSWORD_VARIABLE} is not set: --username {username} logs in with the "
                "password it holds (never given on the command line, where ps shows it)"
            )
        return api_url, Credentials(username, password)
    from airflow.models.connection import Connection
    from airflow.providers.common.compat.sdk import AirflowNotFoundException

    try:
        conn = Connection.get_connection_from_secrets(conn_id)
    except AirflowNotFoundException:
        raise ValueError(
            f"no Airflow connection {conn_id!r}: define it (e.g. "
            f"AIRFLOW_CONN_{conn_id.upper()}=http://USER:PASSWORD@HOST:PORT) "
            f"or pass --api-url and --username"
        ) from None
    return api_of(conn, conn_id)
