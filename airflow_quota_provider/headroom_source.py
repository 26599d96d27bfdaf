"""What the capacity sensor and its trigger ask of one fleet: :class:`HeadroomSource`.

Each kind of fleet answers it its own way:
:class:`~airflow_quota_provider.headroom.BatchHeadroom` from an AWS Batch job queue,
:class:`~airflow_quota_provider.airflow_pools.headroom.PoolsHeadroom` from a pools
fleet's Airflow pools; :func:`~airflow_quota_provider.headroom.headroom_source` picks one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from airflow_quota_provider.core.model import Backend, QueueConfig


class HeadroomSource(ABC):
    """What a share of one fleet could start now; the fleet's quota config."""

    backend: ClassVar[Backend]

    @abstractmethod
    def config(self) -> QueueConfig:
        """The fleet's quota config: its capacity and shares."""

    @abstractmethod
    def headroom(self, quota_share: str) -> dict[str, int]:
        """Units ``quota_share`` could start now (own idle plus borrowable); ``{}`` if the
        share does not exist or is DISABLED."""

    @abstractmethod
    def serialize(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~airflow_quota_provider.headroom.headroom_source`
        that rebuild this source."""

    @abstractmethod
    async def prepare(self) -> None:
        """Get ready to answer in a trigger: read the connection on the triggerer's event
        loop (:mod:`~airflow_quota_provider.hooks.connections`) and build the client in
        a thread, so that :meth:`config` and :meth:`headroom` may then run in a thread
        without asking Airflow anything. A worker needs none of it: there they read the
        connection themselves when first asked."""
