"""Request counts by operation and outcome, for ``GET /_emulator/stats``.

Tests and benchmarks count API calls with it: how many DescribeServiceJob a
sensor made, how many throttled answers a client retried.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, Counter[str]] = {}

    def record(self, operation: str, outcome: str) -> None:
        """Count one request; ``outcome`` is ``ok`` or the error code answered."""
        with self._lock:
            self._counts.setdefault(operation, Counter())[outcome] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            operations = {name: dict(counts) for name, counts in sorted(self._counts.items())}
        total = sum(sum(counts.values()) for counts in operations.values())
        return {"requests": total, "operations": operations}
