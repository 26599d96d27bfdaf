"""Wait until a quota share could start some capacity now."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.sensors.base_aws import AwsBaseSensor
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk import conf

from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.hooks.submission import check_demand
from airflow_quota_provider.refusals import failing_at_once
from airflow_quota_provider.triggers.capacity import QuotaCapacityTrigger, shortfall

if TYPE_CHECKING:
    from airflow.sdk import Context


class QuotaCapacitySensor(AwsBaseSensor[BatchQuotaHook]):
    """Succeed when ``quota_share`` could start ``capacity`` now: its own idle capacity plus
    what it may borrow (capacity it lent out does not count: getting it back needs a preemption).

    Fails at once (``ShareUnavailable``, ``CannotFit``, ``AdmissionRefused``) if
    the share does not exist or is DISABLED, or ``capacity`` is not instances
    per type of the queue or more than the share could ever hold; without
    retries (:class:`~airflow_quota_provider.refusals.RequestRefused`) except for
    a DISABLED share, which may be enabled again.

    :param job_queue: the Batch job queue (name or ARN). (templated)
    :param quota_share: the share that would run the work. (templated)
    :param capacity: instances per type, e.g. ``{"ml.p4d.24xlarge": 2}``. (templated)
    :param deferrable: wait in the triggerer; default ``[operators] default_deferrable``.
    :param poll_interval: seconds between checks (``poke_interval`` when not deferred).
    :param aws_conn_id: the Airflow connection used for AWS credentials.
    :param region_name: AWS region name.
    :param verify: whether or not to verify SSL certificates.
    :param botocore_config: configuration dictionary for the botocore client.
    """

    aws_hook_class = BatchQuotaHook
    template_fields: Sequence[str] = aws_template_fields("job_queue", "quota_share", "capacity")

    def __init__(
        self,
        *,
        job_queue: str,
        quota_share: str,
        capacity: dict[str, int],
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float = conf.getfloat("quota_provider", "poll_interval", fallback=30.0),
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("poke_interval", poll_interval)
        super().__init__(**kwargs)
        self.job_queue = job_queue
        self.quota_share = quota_share
        self.capacity = capacity
        self.deferrable = deferrable
        self.poll_interval = poll_interval

    def execute(self, context: Context) -> Any:
        # A missing, DISABLED or too small share would keep the sensor waiting forever.
        config = self.hook.queue_config(self.job_queue)
        with failing_at_once():
            check_demand(config, self.quota_share, self.capacity, 0, self.task_id)
        if not self.deferrable or self.poke(context):
            return super().execute(context)
        self.defer(
            trigger=QuotaCapacityTrigger(
                job_queue=self.job_queue,
                quota_share=self.quota_share,
                capacity=self.capacity,
                poll_interval=self.poll_interval,
                aws_conn_id=self.aws_conn_id,
                region_name=self.region_name,
                verify=self.verify,
                botocore_config=self.botocore_config,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout else None,
        )

    def poke(self, context: Context) -> bool:
        room = self.hook.share_headroom(self.job_queue, self.quota_share)
        missing = shortfall(room, self.capacity)
        if missing:
            self.log.info(
                "share %s could start %s now; %s more needed", self.quota_share, room, missing
            )
        return not missing

    def execute_complete(self, context: Context, event: dict[str, Any]) -> None:
        self.log.info("share %s could start %s now", self.quota_share, event.get("headroom"))
