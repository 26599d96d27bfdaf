"""Where the capacity sensor and its trigger learn what a share could start now.

A :class:`~airflow_quota_provider.headroom_source.HeadroomSource` answers for one
fleet: its quota config (for the checks that fail a sensor at once) and, per share,
what it could start now, its own idle capacity plus what it may borrow
(:func:`~airflow_quota_provider.core.headroom.headroom`, one rule for every
fleet). :class:`BatchHeadroom` reads an AWS Batch job queue;
:class:`~airflow_quota_provider.airflow_pools.headroom.PoolsHeadroom` a pools
fleet, from Airflow's REST API.

:func:`headroom_source` picks the source from the parameters the sensor and the
trigger share (``job_queue`` or ``fleet_config``, and their connections); a source's
``serialize`` gives them back for the triggerer. They never hold a secret: each
source reads its connection itself, where it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID
from airflow_quota_provider.core.model import Backend, QueueConfig
from airflow_quota_provider.headroom_source import HeadroomSource

if TYPE_CHECKING:
    from airflow_quota_provider.hooks.batch import BatchQuotaHook


class BatchHeadroom(HeadroomSource):
    """An AWS Batch job queue, read through :class:`BatchQuotaHook`.

    :param job_queue: the Batch job queue (name or ARN).
    :param aws_conn_id: the Airflow connection used for AWS credentials.
    :param region_name: AWS region name.
    :param verify: whether to verify SSL certificates.
    :param botocore_config: botocore client configuration as a dict.
    """

    backend = Backend.AWS_BATCH

    def __init__(
        self,
        job_queue: str,
        *,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict[str, Any] | None = None,
    ) -> None:
        self.job_queue = job_queue
        self.aws_conn_id = aws_conn_id
        self.region_name = region_name
        self.verify = verify
        self.botocore_config = botocore_config
        self._hook: BatchQuotaHook | None = None

    @property
    def hook(self) -> BatchQuotaHook:
        if self._hook is None:
            from airflow_quota_provider.hooks.batch import BatchQuotaHook

            self._hook = BatchQuotaHook(**self._hook_arguments())
        return self._hook

    def _hook_arguments(self) -> dict[str, Any]:
        from airflow_quota_provider.hooks.connections import aws_hook_arguments

        return aws_hook_arguments(
            self.aws_conn_id, self.region_name, self.verify, self.botocore_config
        )

    async def prepare(self) -> None:
        from airflow_quota_provider.hooks.connections import aws_hook, batch_quota_hook

        self._hook = await aws_hook(batch_quota_hook, **self._hook_arguments())

    def config(self) -> QueueConfig:
        return self.hook.queue_config(self.job_queue)

    def headroom(self, quota_share: str) -> dict[str, int]:
        return self.hook.share_headroom(self.job_queue, quota_share)

    def serialize(self) -> dict[str, Any]:
        return {
            "job_queue": self.job_queue,
            "aws_conn_id": self.aws_conn_id,
            "region_name": self.region_name,
            "verify": self.verify,
            "botocore_config": self.botocore_config,
        }


def backend_of(job_queue: str | None, fleet_config: str | None) -> Backend:
    """Which kind of fleet the parameters name; ``ValueError`` naming both parameters unless
    exactly one of them is given."""
    if job_queue and fleet_config:
        got = f"got both job_queue={job_queue!r} and fleet_config={fleet_config!r}"
    elif not job_queue and not fleet_config:
        got = "got neither (and [quota_provider] view_fleet_config is not set)"
    else:
        return Backend.AWS_BATCH if job_queue else Backend.AIRFLOW_POOLS
    raise ValueError(
        "give exactly one of job_queue (an AWS Batch job queue) and fleet_config "
        f"(the path of a quota config with backend: {Backend.AIRFLOW_POOLS.value}); {got}"
    )


def headroom_source(
    *,
    job_queue: str | None = None,
    fleet_config: str | None = None,
    airflow_api_conn_id: str = DEFAULT_API_CONN_ID,
    aws_conn_id: str | None = "aws_default",
    region_name: str | None = None,
    verify: bool | str | None = None,
    botocore_config: dict[str, Any] | None = None,
) -> HeadroomSource:
    """The source of the fleet ``job_queue`` or ``fleet_config`` names (exactly one of them).

    :param job_queue: an AWS Batch job queue (name or ARN), read with the AWS connection
        ``aws_conn_id``, ``region_name``, ``verify`` and ``botocore_config``.
    :param fleet_config: the path of a quota config with ``backend: airflow_pools``, its
        task instances read from Airflow's REST API as the user of ``airflow_api_conn_id``.
    """
    if backend_of(job_queue, fleet_config) is Backend.AWS_BATCH:
        assert job_queue  # backend_of checked it
        return BatchHeadroom(
            job_queue,
            aws_conn_id=aws_conn_id,
            region_name=region_name,
            verify=verify,
            botocore_config=botocore_config,
        )
    # imported here: it builds on Airflow's REST client, which a Batch fleet's sensor
    # never needs to load
    from airflow_quota_provider.airflow_pools.headroom import PoolsHeadroom

    assert fleet_config
    return PoolsHeadroom(fleet_config, airflow_api_conn_id=airflow_api_conn_id)
