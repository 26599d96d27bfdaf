"""What a share could start now: its own idle capacity plus what it may borrow.

One rule for every fleet: the capacity sensor asks it of an AWS Batch job
queue (usage from the jobs AWS reports) and of a pools fleet (usage from the
task instances holding the managed pools).
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.occupancy import Occupancy, occupancy


def headroom(
    config: QueueConfig, usage: Mapping[str, Mapping[str, int]], share_name: str
) -> dict[str, int]:
    """What ``share_name`` could start now per unit: its own idle capacity plus what it may borrow.

    Capacity it has lent out is not counted: getting it back means preempting
    a borrower, which is not "now". What it may borrow is bounded by its
    borrow limit and by the capacity no one uses that its owner lends. A share
    that does not exist or is DISABLED could start nothing: ``{}``.
    """
    share = config.share(share_name)
    if share is None or not share.enabled:
        return {}
    table = occupancy(config, usage)
    result: dict[str, int] = {}
    for unit in config.units:
        mine = table[share_name][unit]
        room = mine.idle
        if share.sharing.borrows:
            lendable = _lendable(config, table, usage, unit, share_name)
            limit = config.share_limit(share, unit)
            room += max(0, min(lendable, limit - mine.used - mine.idle))
        result[unit] = max(0, room)
    return result


def _lendable(
    config: QueueConfig,
    table: Mapping[str, Mapping[str, Occupancy]],
    usage: Mapping[str, Mapping[str, int]],
    unit: str,
    borrower: str,
) -> int:
    others_idle = sum(
        table[s.name][unit].idle for s in config.shares if s.name != borrower and s.sharing.lends
    )
    borrowed = sum(table[s.name][unit].borrowed for s in config.shares)
    borrowed += sum(u.get(unit, 0) for name, u in usage.items() if config.share(name) is None)
    lent = sum(table[s.name][unit].lent for s in config.shares)
    unowned_free = max(0, config.unowned(unit) - (borrowed - lent))
    return others_idle + unowned_free
