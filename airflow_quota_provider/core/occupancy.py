"""Who holds what: each share's own use, borrowing, lending and idle capacity per unit.

AWS reports only what each share uses. Who lends to whom is derived here, by
one documented rule: borrowed capacity comes first out of capacity no share
owns, then out of the idle capacity of lending shares (LEND and
LEND_AND_BORROW) in proportion to how much each has idle, rounded by largest
remainder and then by share order, so the figures are whole instances and
always add up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from airflow_quota_provider.core.model import QueueConfig, Share


@dataclass(frozen=True, slots=True)
class Occupancy:
    """One share's view of one unit, in instances.

    ``owned = own_use + lent + idle`` when the share holds no more than it owns;
    ``used = own_use + borrowed``.
    """

    owned: int
    used: int
    own_use: int
    borrowed: int
    lent: int
    idle: int


def occupancy(
    config: QueueConfig, usage: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, Occupancy]]:
    """Per share and unit of ``config``: what it owns, uses, borrows, lends and leaves idle."""
    result: dict[str, dict[str, Occupancy]] = {share.name: {} for share in config.shares}
    for unit in config.units:
        lent = _lent(config, usage, unit)
        for share in config.shares:
            used = usage.get(share.name, {}).get(unit, 0)
            owned = share.owns(unit)
            own_use = min(used, owned)
            result[share.name][unit] = Occupancy(
                owned=owned,
                used=used,
                own_use=own_use,
                borrowed=used - own_use,
                lent=lent.get(share.name, 0),
                idle=owned - own_use - lent.get(share.name, 0),
            )
    return result


def _lent(config: QueueConfig, usage: Mapping[str, Mapping[str, int]], unit: str) -> dict[str, int]:
    def used(share: Share) -> int:
        return usage.get(share.name, {}).get(unit, 0)

    borrowed = sum(max(0, used(s) - s.owns(unit)) for s in config.shares)
    borrowed += sum(n.get(unit, 0) for name, n in usage.items() if config.share(name) is None)
    owned = sum(s.owns(unit) for s in config.shares)
    from_unowned = min(borrowed, max(0, config.capacity.get(unit, 0) - owned))
    to_attribute = borrowed - from_unowned
    idle = {s.name: max(0, s.owns(unit) - used(s)) for s in config.shares if s.sharing.lends}
    total_idle = sum(idle.values())
    if to_attribute <= 0 or total_idle <= 0:
        return {}
    to_attribute = min(to_attribute, total_idle)
    shares = {name: to_attribute * amount // total_idle for name, amount in idle.items()}
    remainders = sorted(
        idle,
        key=lambda name: (-(to_attribute * idle[name] % total_idle), list(idle).index(name)),
    )
    for name in remainders[: to_attribute - sum(shares.values())]:
        shares[name] += 1
    return shares
