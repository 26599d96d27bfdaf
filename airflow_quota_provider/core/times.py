"""How moments and lengths of time are written for people, the same everywhere."""

from __future__ import annotations

from datetime import UTC, datetime


def when(millis: int) -> str:
    """A moment (epoch milliseconds) as ``2026-12-04 19:10:37 UTC``."""
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(seconds: float) -> str:
    """A length of time in the unit that reads best: ``45 s``, ``12 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
