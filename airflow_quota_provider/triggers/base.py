"""What the triggers of this provider share: the AWS connection they poll with."""

from __future__ import annotations

from typing import Any

from airflow.triggers.base import BaseTrigger

from airflow_quota_provider.hooks.batch import BatchQuotaHook


class QuotaBaseTrigger(BaseTrigger):
    """A trigger that talks to AWS Batch through :class:`BatchQuotaHook`.

    :param aws_conn_id: the Airflow connection used for AWS credentials.
    :param region_name: AWS region name.
    :param verify: whether to verify SSL certificates.
    :param botocore_config: botocore client configuration as a dict.
    """

    def __init__(
        self,
        *,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.aws_conn_id = aws_conn_id
        self.region_name = region_name
        self.verify = verify
        self.botocore_config = botocore_config

    def _serialized(self, **own: Any) -> tuple[str, dict[str, Any]]:
        """The classpath and keyword arguments: the trigger's own, then the connection's."""
        connection = {
            "aws_conn_id": self.aws_conn_id,
            "region_name": self.region_name,
            "verify": self.verify,
            "botocore_config": self.botocore_config,
        }
        return f"{type(self).__module__}.{type(self).__qualname__}", {**own, **connection}

    def sagemaker(self) -> Any:
        """A boto3 SageMaker client of the same connection."""
        from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

        hook = SageMakerHook(  # type: ignore[no-untyped-call]
            aws_conn_id=self.aws_conn_id,
            region_name=self.region_name,
            verify=self.verify,
            config=self.botocore_config,
        )
        return hook.conn

    def hook(self) -> BatchQuotaHook:
        return BatchQuotaHook(
            aws_conn_id=self.aws_conn_id,
            region_name=self.region_name,
            verify=self.verify,
            config=self.botocore_config,
        )
