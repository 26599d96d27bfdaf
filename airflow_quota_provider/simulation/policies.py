"""Quota policies to compare on one trace: the same shares, scheduled three ways.

- ``aws``: the config exactly as written, AWS semantics (lending, borrowing,
  reclaim), optionally with the engine's extensions;
- ``static``: the same shares, but none lends or borrows (every share is
  ``RESERVE``): what teams have without quota sharing, like fixed Airflow pools;
- ``pooled``: one first-come-first-served pool of the whole capacity with no
  guarantees (every share owns nothing and borrows without limit, so all
  capacity is lent in submission order and nothing is ever reclaimed): the
  utilization a work-conserving FIFO scheduler reaches, an upper bound.

Shares keep their names under every policy, so results compare share by share;
guarantees are always measured against the config as written.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from airflow_quota_provider.core.model import (
    UNLIMITED_BORROW,
    IdleAssignment,
    QueueConfig,
    Sharing,
    VictimOrder,
)


class Policy(str, enum.Enum):
    AWS = "aws"
    STATIC = "static"
    POOLED = "pooled"


@dataclass(frozen=True)
class Extensions:
    """The engine's opt-in extensions, applied on top of the ``aws`` policy's config;
    ``None`` keeps what the config says."""

    idle_assignment: IdleAssignment | None = None
    min_runtime_seconds: float | None = None
    victim_order: VictimOrder | None = None

    @property
    def chosen(self) -> bool:
        return any(
            v is not None
            for v in (self.idle_assignment, self.min_runtime_seconds, self.victim_order)
        )

    def describe(self) -> str:
        parts = []
        if self.idle_assignment is not None:
            parts.append(f"idle_assignment {self.idle_assignment.value}")
        if self.min_runtime_seconds is not None:
            parts.append(f"min_runtime_seconds {self.min_runtime_seconds:g}")
        if self.victim_order is not None:
            parts.append(f"victim_order {self.victim_order.value}")
        return ", ".join(parts)


def policy_config(
    config: QueueConfig, policy: Policy, extensions: Extensions = Extensions()
) -> QueueConfig:
    """The config that schedules like ``policy``; extensions apply to ``aws`` only."""
    if extensions.chosen and policy is not Policy.AWS:
        raise ValueError(f"extensions ({extensions.describe()}) apply to the aws policy only")
    if policy is Policy.STATIC:
        shares = tuple(
            replace(s, sharing=Sharing.RESERVE, borrow_limit=UNLIMITED_BORROW)
            for s in config.shares
        )
        return replace(config, shares=shares)
    if policy is Policy.POOLED:
        shares = tuple(
            replace(
                s,
                capacity={unit: 0 for unit in s.capacity},
                sharing=Sharing.LEND_AND_BORROW,
                borrow_limit=UNLIMITED_BORROW,
                in_share_preemption=False,
                min_runtime_seconds=None,
            )
            for s in config.shares
        )
        return replace(
            config, shares=shares, idle_assignment=IdleAssignment.FIFO, min_runtime_seconds=None
        )
    return replace(
        config,
        idle_assignment=extensions.idle_assignment or config.idle_assignment,
        min_runtime_seconds=(
            config.min_runtime_seconds
            if extensions.min_runtime_seconds is None
            else extensions.min_runtime_seconds
        ),
        victim_order=extensions.victim_order or config.victim_order,
    )
