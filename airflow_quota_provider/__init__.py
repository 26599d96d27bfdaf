"""airflow-quota-provider: share GPU capacity between teams through AWS Batch quota shares."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """What Airflow's provider manager reads through the ``apache_airflow_provider`` entry point."""
    return {
        "package-name": "airflow-quota-provider",
        "name": "Quota shares for SageMaker training on AWS Batch",
        "description": (
            "Share a fleet of GPU instances between teams through AWS Batch quota "
            "shares: borrowing, reclaim, in-share preemption and explanations."
        ),
        "versions": [__version__],
    }
