"""Airflow pools as the pool manager reads them, and how it marks the ones it manages.

Airflow keeps nothing on a pool but its name, slots, description and
``include_deferred``, so the description is the mark: the manager (and
``airflow-quota apply``) writes ``quota share nlp, gpu: managed by
airflow-quota pool-manager for fleet gpus`` on every pool it sets. The fleet's
name (the config's ``job_queue``) is part of it, so that two fleets on one
Airflow never take each other's pools for their own. Pure data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MANAGED_BY = "managed by airflow-quota pool-manager"

_MARK = re.compile(rf"quota share \S+, \S+: {MANAGED_BY} for fleet (?P<fleet>\S+)")


@dataclass(frozen=True)
class SlotsInUse:
    """The slots of a pool's task instances per state, as Airflow sums them (``pool_slots``
    of its tasks ``scheduled``, ``queued``, ``running`` and ``deferred``)."""

    scheduled: int = 0
    queued: int = 0
    running: int = 0
    deferred: int = 0


@dataclass(frozen=True)
class PoolSlots:
    """One Airflow pool: its slots (-1 = unlimited), ``include_deferred`` and description,
    and what its task instances use, where Airflow said."""

    name: str
    slots: int
    include_deferred: bool
    description: str | None
    in_use: SlotsInUse | None = None


def pool_description(fleet: str, share: str, unit: str) -> str:
    """The description the manager writes on the pool of ``share``'s ``unit`` in ``fleet``."""
    return f"quota share {share}, {unit}: {MANAGED_BY} for fleet {fleet}"


def managing_fleet(description: str | None) -> str | None:
    """The fleet a pool's description says manages it, or ``None`` if it bears no mark."""
    found = _MARK.fullmatch(description or "")
    return found["fleet"] if found else None
