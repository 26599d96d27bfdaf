"""How moments and lengths of time are written for people, the same everywhere."""

from __future__ import annotations

from datetime import UTC, datetime


def when(millis: int) -> str:
    """A moment (epoch milliseconds) as ``2026-12-04 19:10:37 UTC``."""
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


SECOND = "%Y-%m-%dT%H:%M:%SZ"
"""ISO 8601 in UTC to the second, as a machine reads it back: ``2026-12-01T09:00:00Z``."""


def iso_second(millis: int) -> str:
    """A moment (epoch milliseconds) as :data:`SECOND`, rounded down to the second: as
    ``airflow-quota usage --since`` takes it and as ``apply``'s tags record it."""
    return datetime.fromtimestamp(millis // 1000, tz=UTC).strftime(SECOND)


def duration(seconds: float) -> str:
    """A length of time in the unit that reads best: ``45 s``, ``12 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
