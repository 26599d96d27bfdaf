"""Wait until a quota share could start some capacity now."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.sensors.base_aws import AwsBaseSensor
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.providers.common.compat.sdk import conf

from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID
from airflow_quota_provider.aws_batch.submission import check_demand
from airflow_quota_provider.headroom import backend_of, headroom_source
from airflow_quota_provider.headroom_source import HeadroomSource
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.refusals import failing_at_once
from airflow_quota_provider.triggers.capacity import QuotaCapacityTrigger, shortfall

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_quota_provider.triggers.events import CapacityEvent

SECTION = "quota_provider"


class QuotaCapacitySensor(AwsBaseSensor[BatchQuotaHook]):
    """Succeed when ``quota_share`` could start ``capacity`` now: its own idle capacity plus
    what it may borrow (capacity it lent out does not count: getting it back needs a preemption).

    The share belongs to an AWS Batch job queue (``job_queue``, read with the AWS
    connection) or to a pools fleet run by the pool manager (``fleet_config``, its task
    instances read from Airflow's REST API as the user of ``airflow_api_conn_id``); give
    exactly one of ``job_queue`` and ``fleet_config`` (``ValueError`` naming both
    otherwise). Without either, ``fleet_config`` is ``[quota_provider] view_fleet_config``.

    Fails at once (``ShareUnavailable``, ``CannotFit``, ``AdmissionRefused``) if
    the share does not exist or is DISABLED, or ``capacity`` is not units of the
    fleet or more than the share could ever hold; without retries
    (:class:`~airflow_quota_provider.refusals.RequestRefused`) except for a
    DISABLED share, which may be enabled again. A ``fleet_config`` that is not a
    valid config with ``backend: airflow_pools`` raises ``ConfigError``.

    :param quota_share: the share that would run the work. (templated)
    :param capacity: units per type, e.g. ``{"ml.p4d.24xlarge": 2}`` (Batch instances)
        or ``{"gpu": 2}`` (a pools fleet's units). (templated)
    :param job_queue: the Batch job queue (name or ARN). (templated)
    :param fleet_config: the path of a quota config with ``backend: airflow_pools``,
        as the worker and the triggerer see it. (templated)
    :param airflow_api_conn_id: the Airflow connection to the api-server of a pools
        fleet: its URL and a user that may read task instances
        (``http://USER:PASSWORD@HOST:PORT``); default ``airflow_api_default``. (templated)
    :param deferrable: wait in the triggerer; default ``[operators] default_deferrable``.
    :param poll_interval: seconds between checks (``poke_interval`` when not deferred).
    :param aws_conn_id: the Airflow connection used for AWS credentials (Batch).
    :param region_name: AWS region name (Batch).
    :param verify: whether or not to verify SSL certificates (Batch).
    :param botocore_config: configuration dictionary for the botocore client (Batch).
    """

    aws_hook_class = BatchQuotaHook
    template_fields: Sequence[str] = aws_template_fields(
        "job_queue", "fleet_config", "airflow_api_conn_id", "quota_share", "capacity"
    )

    def __init__(
        self,
        *,
        quota_share: str,
        capacity: dict[str, int],
        job_queue: str | None = None,
        fleet_config: str | None = None,
        airflow_api_conn_id: str = DEFAULT_API_CONN_ID,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float = conf.getfloat(SECTION, "poll_interval", fallback=30.0),
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("poke_interval", poll_interval)
        super().__init__(**kwargs)
        if not job_queue and not fleet_config:
            fleet_config = conf.get(SECTION, "view_fleet_config", fallback=None) or None
        # checked here so that a DAG naming no fleet, or two, fails to load
        backend_of(job_queue, fleet_config)
        self.job_queue = job_queue
        self.fleet_config = fleet_config
        self.airflow_api_conn_id = airflow_api_conn_id
        self.quota_share = quota_share
        self.capacity = capacity
        self.deferrable = deferrable
        self.poll_interval = poll_interval

    @cached_property
    def source(self) -> HeadroomSource:
        """The fleet's source, from the rendered parameters."""
        return headroom_source(
            job_queue=self.job_queue,
            fleet_config=self.fleet_config,
            airflow_api_conn_id=self.airflow_api_conn_id,
            aws_conn_id=self.aws_conn_id,
            region_name=self.region_name,
            verify=self.verify,
            botocore_config=self.botocore_config,
        )

    def execute(self, context: Context) -> Any:
        # A missing, DISABLED or too small share would keep the sensor waiting forever.
        config = self.source.config()
        with failing_at_once():
            check_demand(config, self.quota_share, self.capacity, 0, self.task_id)
        if not self.deferrable or self.poke(context):
            return super().execute(context)
        self.defer(
            trigger=QuotaCapacityTrigger(
                quota_share=self.quota_share,
                capacity=self.capacity,
                poll_interval=self.poll_interval,
                **self.source.serialize(),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout else None,
        )

    def poke(self, context: Context) -> bool:
        room = self.source.headroom(self.quota_share)
        missing = shortfall(room, self.capacity)
        if missing:
            self.log.info(
                "share %s could start %s now; %s more needed", self.quota_share, room, missing
            )
        return not missing

    def execute_complete(self, context: Context, event: CapacityEvent) -> None:
        self.log.info("share %s could start %s now", self.quota_share, event.get("headroom"))
