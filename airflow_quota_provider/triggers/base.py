"""What the triggers of this provider share: the AWS connection they poll with.

boto3 and the amazon provider's hooks are imported only where a hook is built, in a
thread (:func:`~airflow_quota_provider.hooks.connections.aws_hook`): Airflow imports
a trigger's module on the triggerer's event loop, which must not wait for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger

from airflow_quota_provider.hooks.connections import aws_hook, aws_hook_arguments, batch_quota_hook
from airflow_quota_provider.hooks.sagemaker import sagemaker_hook

if TYPE_CHECKING:
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

    def _hook_arguments(self) -> dict[str, Any]:
        return aws_hook_arguments(
            self.aws_conn_id, self.region_name, self.verify, self.botocore_config
        )

    async def batch_hook(self) -> BatchQuotaHook:
        """The connection's :class:`BatchQuotaHook`, its client built: its calls may run in
        a thread (see :func:`~airflow_quota_provider.hooks.connections.aws_hook`)."""
        return await aws_hook(batch_quota_hook, **self._hook_arguments())

    async def sagemaker(self) -> Any:
        """A boto3 SageMaker client of the same connection (thread-safe, shared): the
        one :mod:`~airflow_quota_provider.hooks.sagemaker` makes, built in a thread."""
        hook = await aws_hook(sagemaker_hook, **self._hook_arguments())
        return hook.conn
