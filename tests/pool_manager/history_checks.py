"""What a pools fleet's recorded history must hold at every moment, read back from the
manager's database as ``usage`` and the page read it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.history_store import HistoryStore
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.history import Figures, History, Key


def recorded(database: str, config: Path, since: float, until: float) -> History:
    """The fleet's history over ``[since, until)`` (seconds since the epoch)."""
    fleet = Fleet.of(load_config(config))
    store = Store(database, create=False)
    try:
        return HistoryStore(store, fleet.config.job_queue, create=False).read(
            fleet, round(since * 1000), round(until * 1000)
        )
    finally:
        store.engine.dispose()


def conservation_breaks(history: History, capacity: dict[str, int]) -> list[str]:
    """Each moment of ``history``'s changes where the figures do not add up: a share's own
    use, lent and idle must make what it owns, the shares' use must fit the unit's
    ``capacity``, and the fleet's borrowed must equal its lent."""
    now: dict[Key, Figures] = {}
    breaks: list[str] = []
    by_moment = defaultdict(list)
    for change in history.changes:
        by_moment[change.at].append(change)
    for at in sorted(by_moment):
        for change in by_moment[at]:
            now[change.key] = change.figures
        for unit, most in capacity.items():
            shares = {key: f for key, f in now.items() if key[0] is not None and key[1] == unit}
            for (share, _), f in shares.items():
                if f.own_use + f.lent + f.idle != f.owned:
                    breaks.append(f"{at}: {share} {unit} own+lent+idle != owned: {f}")
            used = sum(f.used for f in shares.values())
            borrowed = sum(f.borrowed for f in shares.values())
            lent = sum(f.lent for f in shares.values())
            if used > most:
                breaks.append(f"{at}: {unit} used {used} of {most}")
            if borrowed != lent:
                breaks.append(f"{at}: {unit} borrowed {borrowed} != lent {lent}")
    return breaks
