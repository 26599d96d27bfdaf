"""Capacity limits before and after: what is raised, what is lowered, what that strands.

Used alike for a service environment (the pool) and a quota share (its own
capacity). A unit that is absent has no limit entry at all, which is shown as
``(none)`` and counts as 0 when deciding whether a limit went up or down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from airflow_quota_provider.sync.shapes import Limits, show_count

InUse = Mapping[str, float]
"""Instances of each unit held now by SCHEDULED, STARTING and RUNNING service jobs."""


@dataclass(frozen=True)
class CapacityDiff:
    old: Mapping[str, int]
    new: Mapping[str, int]

    @property
    def units(self) -> list[str]:
        """The units whose limit differs, sorted."""
        return sorted(u for u in {*self.old, *self.new} if self.old.get(u) != self.new.get(u))

    @property
    def lowers(self) -> bool:
        return any(self.new.get(u, 0) < self.old.get(u, 0) or u not in self.new for u in self.old)

    @property
    def raises(self) -> bool:
        return any(self.new[u] > self.old.get(u, 0) or u not in self.old for u in self.new)

    def lines(self) -> list[str]:
        """``capacity ml.p4d.24xlarge 6 -> 4`` for each unit that differs."""
        return [
            f"capacity {u} {show_count(self.old.get(u))} -> {show_count(self.new.get(u))}"
            for u in self.units
        ]

    def lowered_only(self) -> Limits:
        """The new units, none above its old limit: the first step of a mixed change."""
        return {u: min(self.old.get(u, 0), n) for u, n in self.new.items()}

    def raised_only(self) -> Limits:
        """Every old and new unit at the higher of its two limits."""
        units = {*self.old, *self.new}
        return {u: max(self.old.get(u, 0), self.new.get(u, 0)) for u in units}

    def below(self, in_use: InUse, holder: str) -> str | None:
        """Why lowering strands running work (``holder`` runs more than the new limit)."""
        reasons = []
        for unit in self.units:
            now, limit = in_use.get(unit, 0.0), self.new.get(unit, 0)
            if limit < self.old.get(unit, 0) and now > limit:
                old, new = show_count(self.old.get(unit)), show_count(self.new.get(unit))
                in_use_now = f"the {show_count(now)} in use by {holder} now"
                reasons.append(f"{unit} {old} -> {new} is below {in_use_now}")
        return "; ".join(reasons) or None
