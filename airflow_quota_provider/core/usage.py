"""Capacity accounting during a cycle: who holds how much, what is free for whom.

A cycle keeps two views of the queue (see :mod:`~airflow_quota_provider.core.cycle`):
*now* (what really runs, jobs being preempted included) and *after* (once
every preemption decided so far has completed and its preemptor started). A
job is admitted only where both views have room, so capacity is never
over-allocated and capacity freed for a preemptor is not taken by another job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from airflow_quota_provider.core.jobs import RunningJob
from airflow_quota_provider.core.model import QueueConfig, Resources, Share, Sharing


def held(holdings: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Instances held per share and unit, from ``(share, demand)`` of each holder: the one
    sum every backend, the view and the metrics take usage from."""
    usage: dict[str, dict[str, int]] = {}
    for share, demand in holdings:
        units = usage.setdefault(share, {})
        for unit, count in demand.items():
            units[unit] = units.get(unit, 0) + count
    return usage


def usage_of(jobs: Iterable[RunningJob]) -> dict[str, dict[str, int]]:
    """Instances held per share and unit by ``jobs``."""
    return held((job.share, job.demand) for job in jobs)


def borrowers(
    config: QueueConfig, in_start_order: Iterable[tuple[str, str, Mapping[str, int]]]
) -> set[str]:
    """Ids of the holders that take their share beyond what it owns, from ``(id, share,
    demand)`` in the order they got their capacity.

    Neither AWS nor Airflow says which job borrows, only what each holds. Per share, a
    holder borrows if, with it and those before it, the share holds more of one of its
    units than it owns: the latest started are the borrowers, as they were when they
    started (unless an earlier one has ended since), and a restarted manager agrees.
    """
    result: set[str] = set()
    held_so_far: dict[tuple[str, str], int] = {}
    for holder, share_name, demand in in_start_order:
        share = config.share(share_name)
        over = False
        for unit, count in demand.items():
            now_held = held_so_far.get((share_name, unit), 0) + count
            held_so_far[(share_name, unit)] = now_held
            over = over or now_held > (share.owns(unit) if share is not None else 0)
        if over:
            result.add(holder)
    return result


def unit_totals(usage: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Instances held per unit, all shares together."""
    return held(("", units) for units in usage.values()).get("", {})


class UsageView:
    """Usage per share and unit, the queue total, and the idle capacity of RESERVE shares."""

    __slots__ = ("_config", "_reserved_idle", "by_share", "total")

    def __init__(self, config: QueueConfig, by_share: Mapping[str, Mapping[str, int]]) -> None:
        self._config = config
        self.by_share: dict[str, dict[str, int]] = {s: dict(u) for s, u in by_share.items()}
        self.total: dict[str, int] = {}
        for usage in self.by_share.values():
            for unit, count in usage.items():
                self.total[unit] = self.total.get(unit, 0) + count
        self._reserved_idle: dict[str, int] = {}
        for share in config.shares:
            if share.sharing is Sharing.RESERVE:
                usage = self.by_share.get(share.name, {})
                for unit, owned in share.capacity.items():
                    idle = max(0, owned - usage.get(unit, 0))
                    self._reserved_idle[unit] = self._reserved_idle.get(unit, 0) + idle

    def copy(self) -> UsageView:
        clone = UsageView.__new__(UsageView)
        clone._config = self._config
        clone.by_share = {s: dict(u) for s, u in self.by_share.items()}
        clone.total = dict(self.total)
        clone._reserved_idle = dict(self._reserved_idle)
        return clone

    def used(self, share: str, unit: str) -> int:
        return self.by_share.get(share, {}).get(unit, 0)

    def free_for(self, share: Share, unit: str) -> int:
        """Capacity of ``unit`` that ``share`` could take now without preempting anyone.

        Idle capacity of RESERVE shares is never lent, so it is free only for its owner.
        """
        free = (
            self._config.capacity.get(unit, 0)
            - self.total.get(unit, 0)
            - self._reserved_idle.get(unit, 0)
        )
        if share.sharing is Sharing.RESERVE:
            free += max(0, share.owns(unit) - self.used(share.name, unit))
        return free

    def borrowed(self, share: Share, unit: str) -> int:
        return max(0, self.used(share.name, unit) - share.owns(unit))

    def add(self, share: str, demand: Resources) -> None:
        self._change(share, demand, 1)

    def remove(self, share: str, demand: Resources) -> None:
        self._change(share, demand, -1)

    def _change(self, share_name: str, demand: Resources, sign: int) -> None:
        usage = self.by_share.setdefault(share_name, {})
        share = self._config.share(share_name)
        reserve = share is not None and share.sharing is Sharing.RESERVE
        for unit, count in demand.items():
            before = usage.get(unit, 0)
            after = before + sign * count
            usage[unit] = after
            self.total[unit] = self.total.get(unit, 0) + sign * count
            if reserve and share is not None:
                owned = share.owns(unit)
                delta = max(0, owned - after) - max(0, owned - before)
                self._reserved_idle[unit] = self._reserved_idle.get(unit, 0) + delta
