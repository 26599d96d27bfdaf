"""How often a SageMaker training job saves its work: one rule for the endpoint, the view
and ``trace export``.

A job checkpoints when its ``CreateTrainingJob`` request has
``CheckpointConfig.S3Uri``. How often is in no AWS field (it is up to the
training code): the tag ``emulator:checkpoint-interval-seconds`` says it (a
service job's own tags win over its payload's, as when Batch creates the
training job), and without the tag the local endpoint saves every
:data:`DEFAULT_CHECKPOINT_INTERVAL` seconds of training. The endpoint refuses a
tag that is no positive number; readers here fall back to the default for one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

CHECKPOINT_INTERVAL_TAG: Final = "emulator:checkpoint-interval-seconds"
DEFAULT_CHECKPOINT_INTERVAL: Final = 300.0
"""Seconds between the local endpoint's checkpoints of a job without the tag."""


def request_tags(request: Mapping[str, Any]) -> dict[str, str]:
    """A ``CreateTrainingJob`` request's ``Tags`` as a mapping."""
    return {
        str(t["Key"]): str(t.get("Value", ""))
        for t in request.get("Tags") or ()
        if isinstance(t, Mapping) and "Key" in t
    }


def checkpoint_uri(request: Mapping[str, Any]) -> str | None:
    """Where the job saves its checkpoints, if it does."""
    config = request.get("CheckpointConfig")
    uri = config.get("S3Uri") if isinstance(config, Mapping) else None
    return uri if isinstance(uri, str) and uri else None


def checkpoint_interval(
    request: Mapping[str, Any],
    tags: Mapping[str, str] | None = None,
    default: float | None = DEFAULT_CHECKPOINT_INTERVAL,
) -> float | None:
    """Seconds between the job's checkpoints; ``None`` when it does not checkpoint.

    :param request: the ``CreateTrainingJob`` request (a service job's payload).
    :param tags: the service job's tags, which win over the request's own.
    :param default: the interval of a checkpointing job without a valid tag.
    """
    if checkpoint_uri(request) is None:
        return None
    found = {**request_tags(request), **(tags or {})}.get(CHECKPOINT_INTERVAL_TAG)
    try:
        interval = float(found) if found is not None else math.nan
    except ValueError:
        interval = math.nan
    return interval if math.isfinite(interval) and interval > 0 else default


def described_tags(job: Mapping[str, Any]) -> dict[str, str]:
    """The tags a described service job's training jobs get: its payload's, then its own."""
    return {**request_tags(_payload(job)), **(job.get("tags") or {})}


def described_interval(
    job: Mapping[str, Any], default: float | None = DEFAULT_CHECKPOINT_INTERVAL
) -> float | None:
    """:func:`checkpoint_interval` of a ``DescribeServiceJob`` answer."""
    return checkpoint_interval(_payload(job), job.get("tags") or {}, default)


def _payload(job: Mapping[str, Any]) -> dict[str, Any]:
    try:
        payload = json.loads(job.get("serviceRequestPayload") or "{}")
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}
