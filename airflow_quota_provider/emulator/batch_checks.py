"""Batch's documented rules that its service model does not encode (names, ranges, references)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from airflow_quota_provider.emulator.errors import BatchClientError

T = TypeVar("T")

_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")


def check_name(kind: str, value: str) -> None:
    if not _NAME.fullmatch(value):
        raise BatchClientError(
            f"{kind} {value!r} is invalid: up to 128 letters, numbers, hyphens (-) "
            "and underscores (_)"
        )


def check_range(name: str, value: Any, low: int, high: int) -> None:
    if value is not None and not low <= value <= high:
        raise BatchClientError(f"{name} must be between {low} and {high}, got {value}")


def found(record: T | None, kind: str, identifier: str) -> T:
    """``record``, or the ClientException Batch answers an unknown name or ARN with."""
    if record is None:
        raise BatchClientError(f"{kind} {identifier} does not exist")
    return record


def check_capacity_limits(limits: list[dict[str, Any]], *, low: int, high: int) -> None:
    if not low <= len(limits) <= high:
        raise BatchClientError(
            f"capacityLimits must have {low} to {high} entries, got {len(limits)}"
        )
    units = [limit.get("capacityUnit") for limit in limits]
    for limit in limits:
        unit, count = limit.get("capacityUnit"), limit.get("maxCapacity")
        if not unit:
            raise BatchClientError("every capacityLimits entry needs a capacityUnit")
        if count is None or count < 0:
            raise BatchClientError(f"capacityLimits {unit}: maxCapacity must be >= 0, got {count}")
        if units.count(unit) > 1:
            raise BatchClientError(f"capacityLimits names {unit} more than once")
