"""Old import paths of public classes, kept working with a deprecation warning.

Modules are named after the service they reach, in every layer, as the amazon
provider names its own (``operators/batch.py``, ``triggers/sagemaker.py``). A DAG
file written against an old path still imports, and a deferred task whose trigger
row names an old classpath still resumes after an upgrade; both are told where the
class lives now.
"""

from __future__ import annotations

import warnings

from airflow.exceptions import AirflowProviderDeprecationWarning

MOVED: dict[str, str] = {
    "airflow_quota_provider.operators.training": "airflow_quota_provider.operators.batch",
    "airflow_quota_provider.operators.pool_training": "airflow_quota_provider.operators.sagemaker",
    "airflow_quota_provider.triggers.service_job": "airflow_quota_provider.triggers.batch",
    "airflow_quota_provider.triggers.training_job": "airflow_quota_provider.triggers.sagemaker",
}
"""Old module -> the module that holds its classes now."""


def warn_moved(old: str) -> None:
    """Warn, once per importing place, that module ``old`` has moved."""
    warnings.warn(
        f"{old} is deprecated and will be removed in a future release: import from "
        f"{MOVED[old]} instead",
        AirflowProviderDeprecationWarning,
        stacklevel=3,
    )
