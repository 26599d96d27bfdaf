"""Which Airflow pool holds which share's capacity of which unit.

A pools fleet is a quota config whose shares are Airflow pools: each share
owns capacity per unit (``gpu``, ``nvidia-a100``), and each (share, unit) is
one pool. A task joins a share by naming its pool and asks for units with
``pool_slots``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from airflow_quota_provider.airflow_pools.pools import PoolSlots, managing_fleet, pool_description
from airflow_quota_provider.core.backend_config import default_pool
from airflow_quota_provider.core.model import QueueConfig


@dataclass(frozen=True)
class Fleet:
    """The managed pools of one quota config: ``shares[pool] = (share, unit)``."""

    config: QueueConfig
    shares: Mapping[str, tuple[str, str]]

    @classmethod
    def of(cls, config: QueueConfig) -> Fleet:
        """Every share's every unit of the queue (a share may borrow a unit it owns none of),
        in the pool the config names or the default one."""
        shares = {
            config.pools.get(share.name, {}).get(unit) or default_pool(share.name, unit): (
                share.name,
                unit,
            )
            for share in config.shares
            for unit in config.capacity
        }
        return cls(config, shares)

    def pool_of(self, share: str, unit: str) -> str:
        for pool, owner in self.shares.items():
            if owner == (share, unit):
                return pool
        raise KeyError(f"no pool holds {unit} of share {share}")

    def description(self, pool: str) -> str:
        """What the manager writes on ``pool``: whose it is (see :mod:`.pools`)."""
        share, unit = self.shares[pool]
        return pool_description(self.config.job_queue, share, unit)

    def foreign_pools(self, pools: Mapping[str, PoolSlots]) -> list[str]:
        """The config's pools that Airflow shows managed for another fleet (their
        description says so): two managers would fight over their slots."""
        problems = []
        for name in sorted(self.shares):
            found = pools.get(name)
            owner = managing_fleet(found.description) if found is not None else None
            if owner is not None and owner != self.config.job_queue:
                problems.append(self.foreign_pool(name, owner))
        return problems

    def foreign_pool(self, pool: str, owner: str) -> str:
        """Why ``pool``, managed for fleet ``owner``, cannot hold its share here."""
        share, unit = self.shares[pool]
        return (
            f"pool {pool} is managed by airflow-quota pool-manager for fleet {owner} (its "
            f"description says so); two managers would fight over its slots: name another pool "
            f"for share {share}'s {unit} in the config (pools.{share}.{unit})"
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self.shares)
