"""The installed Airflow's release, for the few places where what it offers differs.

The provider supports Airflow 2.11 (the DAG-facing parts on AWS Batch) and every
Airflow 3 release line; the README's table says what each one supports.
"""

from __future__ import annotations

from packaging.version import Version


def release(version: str) -> Version:
    """``version`` without pre- or post-release parts (``3.1.0rc2`` is 3.1.0)."""
    return Version(Version(version).base_version)


def airflow_version() -> Version:
    """The installed Airflow's release."""
    from airflow import __version__

    return release(__version__)


def airflow_at_least(release: str) -> bool:
    """Whether the installed Airflow is ``release`` (e.g. ``"3.1"``) or later."""
    return airflow_version() >= Version(release)


SUPPORTED: dict[str, str] = {
    "2.11": "AWS Batch in DAGs: hook, QuotaTrainingOperator, sensor, triggers (Airflow 2 has "
    "no API server for the pool manager, the reconciler or the GPU Quotas view)",
    "3.0": "everything; the GPU Quotas page has no menu entry (open /quota/); no trigger "
    "on_kill; a cleared running task stuck 'restarting' is cleared again by the manager",
    "3.1": "everything; no trigger on_kill",
    "3.2": "everything; no trigger on_kill",
    "3.3": "everything",
}
"""The Airflow release lines the provider supports, and what each one runs (the README's
table says more)."""
