"""A share's record for the view, ``status`` and metrics, whatever the backend: its
occupancy per unit, how far it may borrow, what runs and what waits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

from airflow_quota_provider.core.model import UNLIMITED_BORROW, QueueConfig, Share
from airflow_quota_provider.core.occupancy import Occupancy
from airflow_quota_provider.core.views import ShareUnit, ShareView


def share_view(
    config: QueueConfig,
    share: Share,
    table: Mapping[str, Mapping[str, Occupancy]],
    running: int,
    waiting: list[Mapping[str, int]],
) -> ShareView:
    """One share's record: its occupancy per unit, its running count, and the demands of
    its waiting jobs (whatever the backend)."""
    wanted: dict[str, int] = {}
    for demand in waiting:
        for unit, count in demand.items():
            wanted[unit] = wanted.get(unit, 0) + count
    units = [
        ShareUnit(**asdict(o), unit=unit, limit=config.share_limit(share, unit))
        for unit, o in sorted(table[share.name].items())
        if o.owned or o.used
    ]
    return ShareView(
        name=share.name,
        strategy=share.sharing.value,
        borrow_limit=share.borrow_limit if share.sharing.borrows else None,
        borrowing=borrowing(share),
        in_share_preemption=share.in_share_preemption,
        state=share.state.value,
        units=units,
        running=running,
        waiting=len(waiting),
        waiting_instances=wanted,
    )


def borrowing(share: Share) -> str:
    """How far ``share`` may borrow, in words; only LEND_AND_BORROW shares borrow at all."""
    if not share.sharing.borrows:
        return "does not borrow"
    if share.borrow_limit == UNLIMITED_BORROW:
        return "borrow limit unlimited"
    return f"borrow limit {share.borrow_limit}%"
