"""A quota share as AWS Batch spells it, from the config and from AWS's answers alike.

Both sides are brought to one comparable form, :class:`ShareSpec`, so that a
difference is a real one: a ``borrowLimit`` AWS leaves out means ``-1``
(unlimited), and is meaningless without LEND_AND_BORROW.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_quota_provider.aws_batch.translate import limits_of
from airflow_quota_provider.core.model import UNLIMITED_BORROW, Share, Sharing

Limits = dict[str, int]
"""``maxCapacity`` per ``capacityUnit``."""

QUOTA_SHARE_POLICY = {"idleResourceAssignmentStrategy": "FIFO"}
"""The only ``quotaSharePolicy`` AWS accepts today."""


@dataclass(frozen=True)
class ShareSpec:
    """The settings of a quota share that AWS Batch stores."""

    capacity: Mapping[str, int]
    strategy: str
    borrow_limit: int | None
    in_share_preemption: str
    state: str

    def request(self) -> dict[str, Any]:
        """The settings as CreateQuotaShare and UpdateQuotaShare take them."""
        sharing: dict[str, Any] = {"strategy": self.strategy}
        if self.borrow_limit is not None:
            sharing["borrowLimit"] = self.borrow_limit
        return {
            "capacityLimits": capacity_limits(self.capacity),
            "resourceSharingConfiguration": sharing,
            "preemptionConfiguration": {"inSharePreemption": self.in_share_preemption},
            "state": self.state,
        }

    def summary(self) -> tuple[str, ...]:
        """``ml.p4d.24xlarge: 8``, ``LEND_AND_BORROW``, ``borrow_limit 100%``, ..."""
        parts = [show_capacity(self.capacity), self.strategy]
        if self.borrow_limit is not None:
            parts.append(f"borrow_limit {show_borrow_limit(self.borrow_limit)}")
        parts.append(f"in-share preemption {self.in_share_preemption}")
        if self.state != "ENABLED":
            parts.append(f"state {self.state}")
        return tuple(parts)


def spec_from_share(share: Share) -> ShareSpec:
    borrows = share.sharing is Sharing.LEND_AND_BORROW
    return ShareSpec(
        capacity=dict(share.capacity),
        strategy=share.sharing.value,
        borrow_limit=share.borrow_limit if borrows else None,
        in_share_preemption="ENABLED" if share.in_share_preemption else "DISABLED",
        state=share.state.value,
    )


def spec_from_aws(share: Mapping[str, Any]) -> ShareSpec:
    """A ListQuotaShares / DescribeQuotaShare item in comparable form."""
    sharing = share.get("resourceSharingConfiguration") or {}
    strategy = str(sharing.get("strategy", ""))
    borrow_limit = None
    if strategy == Sharing.LEND_AND_BORROW.value:
        borrow_limit = int(sharing.get("borrowLimit", UNLIMITED_BORROW))
    preemption = share.get("preemptionConfiguration") or {}
    return ShareSpec(
        capacity=limits_from_aws(share.get("capacityLimits")),
        strategy=strategy,
        borrow_limit=borrow_limit,
        in_share_preemption=str(preemption.get("inSharePreemption", "DISABLED")),
        state=str(share.get("state", "ENABLED")),
    )


def limits_from_aws(limits: object) -> Limits:
    """A ``capacityLimits`` list as read everywhere (:func:`limits_of`); ``{}`` if not a list."""
    return limits_of(limits) if isinstance(limits, list) else {}


def capacity_limits(capacity: Mapping[str, int]) -> list[dict[str, Any]]:
    return [
        {"capacityUnit": unit, "maxCapacity": count} for unit, count in sorted(capacity.items())
    ]


def show_capacity(capacity: Mapping[str, int]) -> str:
    return ", ".join(f"{unit}: {count}" for unit, count in sorted(capacity.items()))


def show_borrow_limit(limit: int) -> str:
    return "unlimited" if limit == UNLIMITED_BORROW else f"{limit}%"


def show_count(value: int | float | None) -> str:
    """An instance count; ``(none)`` where a unit is absent, whole floats as integers."""
    if value is None:
        return "(none)"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def named(reference: object, kind: str, name: str) -> bool:
    """Whether a name-or-ARN ``reference`` is the ``kind`` resource called ``name``.

    Batch answers with ARNs (``arn:aws:batch:...:service-environment/NAME`` for
    the kind ``service environment``) where a request may have given a name.
    """
    if not isinstance(reference, str):
        return False
    resource = kind.replace(" ", "-")
    return reference == name or reference.endswith(f":{resource}/{name}")
