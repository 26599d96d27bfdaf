"""How often a SageMaker training job saves its work: one rule for the endpoint and the view.

A job checkpoints when its ``CreateTrainingJob`` request has
``CheckpointConfig.S3Uri``. How often is in no AWS field: the tag
``emulator:checkpoint-interval-seconds`` says it, and without the tag the local
endpoint saves every :data:`DEFAULT_CHECKPOINT_INTERVAL` seconds of training
(it refuses a tag that is no positive number; here such a tag is ignored).
The view counts the work a preemption lost by the same rule, so a job the
endpoint checkpoints is never shown as one without a checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

CHECKPOINT_INTERVAL_TAG: Final = "emulator:checkpoint-interval-seconds"
DEFAULT_CHECKPOINT_INTERVAL: Final = 300.0


def request_tags(request: Mapping[str, Any]) -> dict[str, str]:
    """A ``CreateTrainingJob`` request's ``Tags`` as a mapping."""
    return {t["Key"]: t.get("Value", "") for t in request.get("Tags") or () if "Key" in t}


def checkpoint_uri(request: Mapping[str, Any]) -> str | None:
    """Where the job saves its checkpoints, if it does."""
    config = request.get("CheckpointConfig")
    uri = config.get("S3Uri") if isinstance(config, Mapping) else None
    return uri if isinstance(uri, str) and uri else None


def checkpoint_interval(
    request: Mapping[str, Any], tags: Mapping[str, str] | None = None
) -> float | None:
    """Seconds between the job's checkpoints; ``None`` when it does not checkpoint.

    :param request: the ``CreateTrainingJob`` request (a service job's payload).
    :param tags: the service job's tags, which win over the request's own, as
        they do when Batch creates the training job.
    """
    if checkpoint_uri(request) is None:
        return None
    found = {**request_tags(request), **(tags or {})}.get(CHECKPOINT_INTERVAL_TAG)
    if found is None:
        return DEFAULT_CHECKPOINT_INTERVAL
    try:
        interval = float(found)
    except ValueError:
        return DEFAULT_CHECKPOINT_INTERVAL
    return interval if math.isfinite(interval) and interval > 0 else DEFAULT_CHECKPOINT_INTERVAL
