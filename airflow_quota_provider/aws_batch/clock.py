"""AWS's clock, read from a job queue's snapshot: what "now" is for the jobs' timestamps."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any


def now_of(snapshot: Mapping[str, Any]) -> int:
    """AWS's time of a ``GetJobQueueSnapshot`` answer (epoch ms); the wall clock if it gives
    none."""
    for key in ("queueUtilization", "frontOfQueue", "frontOfQuotaShares"):
        stamp = (snapshot.get(key) or {}).get("lastUpdatedAt")
        if stamp:
            return int(stamp)
    return int(time.time() * 1000)
