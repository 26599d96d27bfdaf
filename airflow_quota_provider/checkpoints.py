"""How often a service job checkpoints, read from its ``DescribeServiceJob`` answer.

A SageMaker training job checkpoints only when its request has
``CheckpointConfig.S3Uri``; how often is up to its training code, which
AWS does not report. The local endpoint saves the work every
``emulator:checkpoint-interval-seconds`` (a tag of the service job or of its
payload, the service job's winning) or every
:data:`DEFAULT_CHECKPOINT_INTERVAL` seconds without one. The endpoint, the
view and ``trace export`` read it here, the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

CHECKPOINT_INTERVAL_TAG = "emulator:checkpoint-interval-seconds"
DEFAULT_CHECKPOINT_INTERVAL = 300.0
"""Seconds between the local endpoint's checkpoints of a job without the tag."""


def described_tags(job: Mapping[str, Any]) -> dict[str, str]:
    """The tags the job's training jobs get: its payload's, then its own (which win)."""
    payload = _payload(job)
    tags = {str(t.get("Key")): str(t.get("Value", "")) for t in payload.get("Tags") or ()}
    tags.update(job.get("tags") or {})
    return tags


def checkpoint_interval(job: Mapping[str, Any], default: float | None) -> float | None:
    """Seconds between the checkpoints of a described service job: ``None`` when its
    payload names no ``CheckpointConfig.S3Uri``; else its tag, or ``default`` when it has
    none (or one that is not a number of seconds > 0, which the endpoint refuses)."""
    if not (_payload(job).get("CheckpointConfig") or {}).get("S3Uri"):
        return None
    text = described_tags(job).get(CHECKPOINT_INTERVAL_TAG)
    try:
        interval = float(text) if text is not None else math.nan
    except ValueError:
        interval = math.nan
    return interval if math.isfinite(interval) and interval > 0 else default


def _payload(job: Mapping[str, Any]) -> dict[str, Any]:
    try:
        payload = json.loads(job.get("serviceRequestPayload") or "{}")
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}
