"""The record ``airflow-quota apply`` keeps of its changes, as tags on the AWS resources.

AWS Batch gives no time of making for job queues, service environments or quota
shares, and keeps only their current settings. So ``apply`` tags what it creates or
changes (``TagResource`` right after the change, to the second by AWS's clock: the
``Date`` of the answer to the call that made it), and the usage history reads the tags
back (:func:`past_of`, :func:`created_at`) to figure each moment with the settings
then in force.

=============================  ===========================================================
``airflow-quota:created-at``   when apply created it: ``2026-12-01T09:00:00Z``
``airflow-quota:changed-at``   when apply last changed its settings
``airflow-quota:settings``     the settings apply last set: a share's
                               ``ml.p4d.24xlarge=8 strategy=LEND_AND_BORROW borrow=100``,
                               an environment's ``ml.p4d.24xlarge=16``
``airflow-quota:before``       the settings before the last change and since when:
                               ``since=2026-11-30T12:00:00Z ml.p4d.24xlarge=6 strategy=LEND``
                               (``since=unknown`` when apply did not know)
=============================  ===========================================================

Values use only the characters AWS allows in tags (letters, digits, spaces and
``_ . : / = + - @``) and stay within its 256. Only the last change is kept: a share
changed twice by apply is known back to its last change and the one before it, and
``before``'s ``since`` says from when. A ``settings`` tag that no longer matches the
resource means something other than apply changed it since: its settings from the
record on are not known. Pure: the tags come in as ``{key: value}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from airflow_quota_provider.aws_batch.translate import limits_of
from airflow_quota_provider.core.config_timeline import EARLIEST, Past, QueuePast, Stretch
from airflow_quota_provider.core.model import (
    UNLIMITED_BORROW,
    QueueConfig,
    Resources,
    Share,
    Sharing,
)
from airflow_quota_provider.core.times import SECOND, iso_second, when

PREFIX = "airflow-quota:"
CREATED_AT = f"{PREFIX}created-at"
CHANGED_AT = f"{PREFIX}changed-at"
SETTINGS = f"{PREFIX}settings"
BEFORE = f"{PREFIX}before"
MAX_VALUE = 256
"""The longest tag value AWS takes."""
UNKNOWN = "unknown"
NOT_MADE = "not made or changed by airflow-quota apply"

T = TypeVar("T")
Tags = Mapping[str, str]


def stamp(millis: int) -> str:
    """``2026-12-01T09:00:00Z``: a moment as a tag value (to the second)."""
    return iso_second(millis)


def parse_stamp(value: str | None) -> int | None:
    """Epoch ms of a :func:`stamp`; ``None`` for anything else."""
    try:
        moment = datetime.strptime(value or "", SECOND)
    except ValueError:
        return None
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def aws_time(response: Mapping[str, Any]) -> int:
    """AWS's clock when it answered (the answer's HTTP ``Date``), in epoch ms; this host's
    clock when the answer carries none."""
    headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    try:
        return int(parsedate_to_datetime(str(headers["date"])).timestamp() * 1000)
    except (KeyError, TypeError, ValueError):
        return int(time.time() * 1000)


def share_settings(share: Share) -> str:
    """A share's settings that shape its history, as :data:`SETTINGS` holds them."""
    parts = [f"{unit}={count}" for unit, count in sorted(share.capacity.items())]
    parts.append(f"strategy={share.sharing.value}")
    if share.sharing.borrows:
        parts.append(f"borrow={share.borrow_limit}")
    return " ".join(parts)[:MAX_VALUE]


def capacity_settings(capacity: Resources) -> str:
    """An environment's capacity, as :data:`SETTINGS` holds it."""
    return " ".join(f"{unit}={count}" for unit, count in sorted(capacity.items()))[:MAX_VALUE]


def read_capacity(text: str) -> dict[str, int] | None:
    """The capacity :func:`capacity_settings` wrote; ``None`` if it is not one."""
    capacity: dict[str, int] = {}
    for part in text.split():
        unit, _, count = part.partition("=")
        if not count.isdigit():
            return None
        capacity[unit] = int(count)
    return capacity


def reader_of_share(today: Share) -> Callable[[str], Share | None]:
    """Reads :func:`share_settings` into ``today`` with those settings."""

    def read(text: str) -> Share | None:
        fields = dict(part.partition("=")[::2] for part in text.split())
        try:
            sharing = Sharing(fields.pop("strategy", ""))
            borrow = int(fields.pop("borrow", UNLIMITED_BORROW))
        except ValueError:
            return None
        capacity = read_capacity(" ".join(f"{k}={v}" for k, v in fields.items()))
        if capacity is None:
            return None
        return replace(today, capacity=capacity, sharing=sharing, borrow_limit=borrow)

    return read


def creation_tags(settings: str) -> dict[str, str]:
    """The tags of a resource apply creates, but for its time (:data:`CREATED_AT`)."""
    return {SETTINGS: settings}


def change_tags(tags: Tags, before: str, after: str) -> dict[str, str]:
    """The tags of a change apply makes from ``before`` to ``after`` on a resource tagged
    ``tags``, but for its time (:data:`CHANGED_AT`): ``before``'s since is the last
    record's time when the resource still has the settings it recorded."""
    since = UNKNOWN
    if tags.get(SETTINGS) == before:
        since = tags.get(CHANGED_AT) or tags.get(CREATED_AT) or UNKNOWN
    return {BEFORE: f"since={since} {before}"[:MAX_VALUE], SETTINGS: after}


def created_at(tags: Tags) -> int | None:
    """When apply created the resource; ``None`` when it left no record."""
    return parse_stamp(tags.get(CREATED_AT))


def past_of(
    tags: Tags, today: T, write: Callable[[T], str], read: Callable[[str], T | None]
) -> Past[T]:
    """What the tags tell of a resource's settings over time, today's being ``today``
    (:func:`write` gives their tag form, :func:`read` reads one back)."""
    created, changed = created_at(tags), parse_stamp(tags.get(CHANGED_AT))
    last = changed if changed is not None else created
    if last is None:
        return Past.unknown(today, NOT_MADE)
    first = EARLIEST if created is None else created
    if tags.get(SETTINGS) != write(today):
        why = f"changed after {when(last)} other than by airflow-quota apply"
        return Past((Stretch(first, today),), None, why)
    if changed is None:
        return Past((Stretch(first, today),), first)
    since_text, _, text = tags.get(BEFORE, "").partition(" ")
    before = read(text) if since_text.startswith("since=") else None
    if before is None:
        why = "apply's record of its settings before then is unreadable"
        return Past((Stretch(first, today),), changed, why)
    since = parse_stamp(since_text.removeprefix("since="))
    if since is None:
        why = "set by other than airflow-quota apply"
        return Past((Stretch(first, before), Stretch(changed, today)), changed, why)
    why = "airflow-quota apply keeps only its last change"
    return Past((Stretch(first, before), Stretch(changed, today)), since, why)


def queue_past(
    today: QueueConfig,
    queue: Mapping[str, Any],
    environments: Iterable[Mapping[str, Any]],
    shares: Iterable[Mapping[str, Any]],
) -> QueuePast:
    """What the tags of a queue (``DescribeJobQueues``), its environments
    (``DescribeServiceEnvironments``) and its shares (``DescribeQuotaShare``) tell of its
    past, today's config being ``today``."""
    described = {str(s["quotaShareName"]): s for s in shares}
    share_pasts = {}
    for share in today.shares:
        tags = (described.get(share.name) or {}).get("tags") or {}
        share_pasts[share.name] = past_of(tags, share, share_settings, reader_of_share(share))
    environment_pasts: dict[str, Past[Resources]] = {
        str(e["serviceEnvironmentName"]): past_of(
            e.get("tags") or {},
            limits_of(e.get("capacityLimits")),
            capacity_settings,
            read_capacity,
        )
        for e in environments
    }
    return QueuePast(
        today=today,
        created=created_at(queue.get("tags") or {}),
        environments=environment_pasts,
        shares=share_pasts,
        created_why=NOT_MADE,
    )
