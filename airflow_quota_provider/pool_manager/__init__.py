"""The pool manager: quota shares for any Airflow task, through Airflow pools.

Each (share, unit) of a quota config is one Airflow pool; the manager sets the
pools' slots to what the core admits, and preempts by clearing task instances.
:mod:`~airflow_quota_provider.pool_manager.decide` is its pure decision step.
"""

DEFAULT_DATABASE_URL = "sqlite:///airflow-quota-pool-manager.db"
"""The manager's own database unless ``--database`` names one (a file in the current folder)."""

DEFAULT_API_CONN_ID = "airflow_api_default"
"""The Airflow connection to the api-server (URL and user) unless one is named."""
