"""airflow-quota-provider: share GPU capacity between teams through AWS Batch quota shares."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

INTEGRATION = "AWS Batch quota shares"
_PKG = "airflow_quota_provider"


def get_provider_info() -> dict[str, Any]:
    """What Airflow's provider manager reads through the ``apache_airflow_provider`` entry point."""
    from airflow_quota_provider.versions import SUPPORTED

    return {
        "package-name": "airflow-quota-provider",
        "name": "Quota shares for SageMaker training on AWS Batch",
        "description": (
            "Share a fleet of GPU instances between teams through AWS Batch quota "
            "shares: borrowing, reclaim, in-share preemption and explanations."
        ),
        "versions": [__version__],
        "supported-airflow-versions": SUPPORTED,
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://docs.aws.amazon.com/batch/latest/userguide/quota-shares.html",
                "tags": ["aws"],
            }
        ],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": [f"{_PKG}.hooks.batch"]}],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [f"{_PKG}.operators.batch", f"{_PKG}.operators.sagemaker"],
            }
        ],
        "sensors": [
            {"integration-name": INTEGRATION, "python-modules": [f"{_PKG}.sensors.capacity"]}
        ],
        "triggers": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    f"{_PKG}.triggers.batch",
                    f"{_PKG}.triggers.capacity",
                    f"{_PKG}.triggers.sagemaker",
                ],
            }
        ],
        "extra-links": [
            f"{_PKG}.links.batch_quota.ServiceJobLink",
            f"{_PKG}.links.batch_quota.TrainingJobLink",
        ],
        "config": {
            "quota_provider": {
                "description": "Defaults of the quota-share operator, sensor and triggers.",
                "options": {
                    "poll_interval": {
                        "description": (
                            "Seconds between status checks of QuotaTrainingOperator and "
                            "QuotaCapacitySensor when the task does not set poll_interval."
                        ),
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "60",
                        "default": "30",
                    },
                    "view_aws_conn_id": {
                        "description": (
                            "AWS connection the GPU Quotas view reads AWS Batch with; if it "
                            "does not exist, boto3's usual environment is used."
                        ),
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "aws_quota",
                        "default": "aws_default",
                    },
                    "view_region_name": {
                        "description": "AWS region of the GPU Quotas view; empty: the connection's",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "us-east-1",
                        "default": "",
                    },
                    "view_cache_seconds": {
                        "description": "Seconds the GPU Quotas view reuses what it read of a queue",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "30",
                        "default": "15",
                    },
                    "view_sample_seconds": {
                        "description": (
                            "How often the api-server reads every job queue, setting the "
                            "quota_provider.share.* gauges; 0: only when someone looks."
                        ),
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "300",
                        "default": "60",
                    },
                    "max_poll_failures": {
                        "description": (
                            "A deferred QuotaTrainingOperator fails (PollingFailed) once its "
                            "job's status could not be read this many polls in a row, when "
                            "the task does not set max_poll_failures."
                        ),
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": "20",
                        "default": "10",
                    },
                },
            }
        },
    }
