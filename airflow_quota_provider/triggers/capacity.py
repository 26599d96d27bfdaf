"""Wait in the triggerer until a quota share could start a given capacity."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow.triggers.base import TriggerEvent

from airflow_quota_provider.triggers.base import QuotaBaseTrigger


def shortfall(headroom: Mapping[str, int], capacity: Mapping[str, int]) -> dict[str, int]:
    """Instances per type missing for ``capacity`` to start now; empty if it could."""
    return {
        unit: need - headroom.get(unit, 0)
        for unit, need in sorted(capacity.items())
        if need > headroom.get(unit, 0)
    }


class QuotaCapacityTrigger(QuotaBaseTrigger):
    """Fire ``{"status": "success", "headroom": {...}}`` once a share could start ``capacity``.

    :param job_queue: the Batch job queue (name or ARN).
    :param quota_share: the share that would run the work.
    :param capacity: instances per type, e.g. ``{"ml.p4d.24xlarge": 2}``.
    :param poll_interval: seconds between checks.
    :param aws_conn_id, region_name, verify, botocore_config: the AWS connection,
        as for :class:`~airflow_quota_provider.triggers.base.QuotaBaseTrigger`.
    """

    def __init__(
        self,
        *,
        job_queue: str,
        quota_share: str,
        capacity: dict[str, int],
        poll_interval: float = 30,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            aws_conn_id=aws_conn_id,
            region_name=region_name,
            verify=verify,
            botocore_config=botocore_config,
        )
        self.job_queue = job_queue
        self.quota_share = quota_share
        self.capacity = capacity
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return self._serialized(
            job_queue=self.job_queue,
            quota_share=self.quota_share,
            capacity=self.capacity,
            poll_interval=self.poll_interval,
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = self.hook()
        last: dict[str, int] | None = None
        while True:
            room = await asyncio.to_thread(hook.share_headroom, self.job_queue, self.quota_share)
            missing = shortfall(room, self.capacity)
            if not missing:
                yield TriggerEvent({"status": "success", "headroom": room})  # type: ignore[no-untyped-call]
                return
            if missing != last:
                self.log.info(
                    "share %s could start %s now; %s more needed", self.quota_share, room, missing
                )
                last = missing
            await asyncio.sleep(self.poll_interval)
