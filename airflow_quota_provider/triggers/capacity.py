"""Wait in the triggerer until a quota share could start a given capacity."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID
from airflow_quota_provider.headroom import headroom_source
from airflow_quota_provider.triggers.events import CapacityEvent


def shortfall(headroom: Mapping[str, int], capacity: Mapping[str, int]) -> dict[str, int]:
    """Units missing for ``capacity`` to start now; empty if it could."""
    return {
        unit: need - headroom.get(unit, 0)
        for unit, need in sorted(capacity.items())
        if need > headroom.get(unit, 0)
    }


class QuotaCapacityTrigger(BaseTrigger):
    """Fire a :class:`~airflow_quota_provider.triggers.events.CapacityEvent` once a share could
    start ``capacity``.

    The fleet is an AWS Batch job queue (``job_queue`` and the AWS connection) or a pools
    fleet (``fleet_config`` and ``airflow_api_conn_id``): exactly one of ``job_queue`` and
    ``fleet_config``, as for
    :func:`~airflow_quota_provider.headroom.headroom_source`, which reads it. Its connection
    is read on the event loop, once
    (:meth:`~airflow_quota_provider.headroom_source.HeadroomSource.prepare`), and each check runs
    in a thread; the serialized trigger holds no secret.

    :param quota_share: the share that would run the work.
    :param capacity: units per type, e.g. ``{"ml.p4d.24xlarge": 2}`` or ``{"gpu": 2}``.
    :param poll_interval: seconds between checks.
    :param job_queue: the Batch job queue (name or ARN).
    :param fleet_config: the path of a quota config with ``backend: airflow_pools``.
    :param airflow_api_conn_id: the Airflow connection to the api-server (pools fleet).
    :param aws_conn_id: the Airflow connection used for AWS credentials (Batch).
    :param region_name: AWS region name.
    :param verify: whether to verify SSL certificates.
    :param botocore_config: botocore client configuration as a dict.
    """

    def __init__(
        self,
        *,
        quota_share: str,
        capacity: dict[str, int],
        poll_interval: float = 30,
        job_queue: str | None = None,
        fleet_config: str | None = None,
        airflow_api_conn_id: str = DEFAULT_API_CONN_ID,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.quota_share = quota_share
        self.capacity = capacity
        self.poll_interval = poll_interval
        self.source = headroom_source(
            job_queue=job_queue,
            fleet_config=fleet_config,
            airflow_api_conn_id=airflow_api_conn_id,
            aws_conn_id=aws_conn_id,
            region_name=region_name,
            verify=verify,
            botocore_config=botocore_config,
        )

    def serialize(self) -> tuple[str, dict[str, Any]]:
        own = {
            "quota_share": self.quota_share,
            "capacity": self.capacity,
            "poll_interval": self.poll_interval,
        }
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            **own,
            **self.source.serialize(),
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        last: dict[str, int] | None = None
        await self.source.prepare()
        while True:
            room = await asyncio.to_thread(self.source.headroom, self.quota_share)
            missing = shortfall(room, self.capacity)
            if not missing:
                event = CapacityEvent(status="success", headroom=room)
                yield TriggerEvent(event)  # type: ignore[no-untyped-call]
                return
            if missing != last:
                self.log.info(
                    "share %s could start %s now; %s more needed", self.quota_share, room, missing
                )
                last = missing
            await asyncio.sleep(self.poll_interval)
