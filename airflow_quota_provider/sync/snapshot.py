"""What AWS Batch has now for a sync target: the planner's input.

:mod:`~airflow_quota_provider.sync.aws_state` reads it,
:mod:`~airflow_quota_provider.sync.plan` compares it with the target and
:mod:`~airflow_quota_provider.sync.warnings` tells what of it a sync leaves alone. It
holds the plain dicts Batch's Describe and List calls answer with; nothing here calls AWS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AwsState:
    """What AWS has now, as Batch answers; ``None`` where a resource does not exist.

    :param policy: the scheduling policy with the target's name.
    :param queue_policy: the scheduling policy the job queue uses now, if it has one.
    :param shares: the job queue's shares as DescribeQuotaShare answers (with their tags).
    :param jobs: the job queue's ListServiceJobs summaries that have not ended.
    """

    environment: Mapping[str, Any] | None = None
    policy: Mapping[str, Any] | None = None
    queue: Mapping[str, Any] | None = None
    queue_policy: Mapping[str, Any] | None = None
    shares: Sequence[Mapping[str, Any]] = ()
    jobs: Sequence[Mapping[str, Any]] = ()
