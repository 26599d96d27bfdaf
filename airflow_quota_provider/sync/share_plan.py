"""The quota shares of a plan: which to create, update and delete, and when.

AWS refuses a share change that would make the queue's shares own more of a
unit than the service environment has, so calls come in three phases around
the environment's own lowering: deletes, then lowerings (a share that also
raises something is first lowered on its own), then raises, other updates and
creates. Deleting a share, and lowering one below what its jobs use now, are
destructive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_quota_provider.aws_batch.change_tags import (
    CHANGED_AT,
    CREATED_AT,
    change_tags,
    creation_tags,
    share_settings,
)
from airflow_quota_provider.aws_batch.translate import share_from_aws
from airflow_quota_provider.core.model import QueueConfig, Share
from airflow_quota_provider.sync.capacity import CapacityDiff, InUse
from airflow_quota_provider.sync.changes import SHARE, Call, Change, Record
from airflow_quota_provider.sync.shapes import (
    ShareSpec,
    capacity_limits,
    show_borrow_limit,
    spec_from_aws,
    spec_from_share,
)


@dataclass
class SharePhases:
    """Share changes, and their calls by phase (see the module docstring)."""

    changes: list[Change] = field(default_factory=list)
    deletes: list[Call] = field(default_factory=list)
    lowers: list[Call] = field(default_factory=list)
    raises: list[Call] = field(default_factory=list)


def plan_shares(
    config: QueueConfig,
    current: Sequence[Mapping[str, Any]],
    in_use: Mapping[str, InUse],
    unfinished: Mapping[str, int],
) -> SharePhases:
    """:param in_use: per share name, the instances its jobs hold now.
    :param unfinished: per share name, how many of its jobs have not ended.
    """
    phases = SharePhases()
    existing = {str(share["quotaShareName"]): share for share in current}
    for name in sorted(existing.keys() - {s.name for s in config.shares}):
        _delete(phases, existing[name], unfinished.get(name, 0))
    for share in config.shares:
        found = existing.get(share.name)
        if found is None:
            _create(phases, config.job_queue, share)
        else:
            _update(phases, found, share, in_use.get(share.name, {}))
    return phases


def _create(phases: SharePhases, queue: str, share: Share) -> None:
    wanted = spec_from_share(share)
    change = Change("create", SHARE, share.name, wanted.summary())
    params = {"quotaShareName": share.name, "jobQueue": queue, **wanted.request()}
    record = Record(CREATED_AT, creation_tags(share_settings(share)), arn_key="quotaShareArn")
    phases.changes.append(change)
    phases.raises.append(Call("CreateQuotaShare", params, change, record))


def _delete(phases: SharePhases, share: Mapping[str, Any], unfinished: int) -> None:
    why = "not in the config"
    if unfinished:
        verb = "has" if unfinished == 1 else "have"
        why += f"; {unfinished} of its jobs {verb} not ended"
    change = Change("delete", SHARE, str(share["quotaShareName"]), destructive=why)
    phases.changes.append(change)
    phases.deletes.append(
        Call("DeleteQuotaShare", {"quotaShareArn": share["quotaShareArn"]}, change)
    )


def _update(phases: SharePhases, share: Mapping[str, Any], target: Share, in_use: InUse) -> None:
    wanted, now = spec_from_share(target), spec_from_aws(share)
    capacity = CapacityDiff(now.capacity, wanted.capacity)
    details = [*capacity.lines(), *_setting_lines(now, wanted)]
    if not details:
        return
    name = str(share["quotaShareName"])
    change = Change("update", SHARE, name, tuple(details), capacity.below(in_use, f"share {name}"))
    phases.changes.append(change)
    arn = share["quotaShareArn"]
    params = {"quotaShareArn": arn, **wanted.request()}
    full = Call("UpdateQuotaShare", params, change, _change_record(share, target))
    if not capacity.lowers:
        phases.raises.append(full)
    elif not capacity.raises:
        phases.lowers.append(full)
    else:
        lowered = {"quotaShareArn": arn, "capacityLimits": capacity_limits(capacity.lowered_only())}
        phases.lowers.append(Call("UpdateQuotaShare", lowered, change))
        phases.raises.append(full)


def _change_record(share: Mapping[str, Any], target: Share) -> Record | None:
    """The record of a change to the settings that shape the share's history, if any."""
    before, after = share_settings(share_from_aws(share)), share_settings(target)
    if before == after:
        return None
    tags = change_tags(share.get("tags") or {}, before, after)
    return Record(CHANGED_AT, tags, arn=str(share["quotaShareArn"]))


def _setting_lines(now: ShareSpec, wanted: ShareSpec) -> list[str]:
    lines = []
    if now.strategy != wanted.strategy:
        lines.append(f"strategy {now.strategy} -> {wanted.strategy}")
    if now.borrow_limit != wanted.borrow_limit and wanted.borrow_limit is not None:
        old = "(none)" if now.borrow_limit is None else show_borrow_limit(now.borrow_limit)
        lines.append(f"borrow_limit {old} -> {show_borrow_limit(wanted.borrow_limit)}")
    if now.in_share_preemption != wanted.in_share_preemption:
        lines.append(
            f"in-share preemption {now.in_share_preemption} -> {wanted.in_share_preemption}"
        )
    if now.state != wanted.state:
        lines.append(f"state {now.state} -> {wanted.state}")
    return lines
