"""A training task's ``SubmitServiceJob`` request: checked, named and made idempotent.

Every check runs before anything is submitted, so a task that could never
run fails at once with what is wrong, instead of stalling at the head of its
share (AWS's ``MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_quota_provider.aws_batch.training_config import instances_of, validate_training_config
from airflow_quota_provider.aws_batch.translate import share_limits
from airflow_quota_provider.core.admission import check_submission
from airflow_quota_provider.core.jobs import WaitingJob
from airflow_quota_provider.core.model import MAX_PRIORITY, MIN_PRIORITY, QueueConfig
from airflow_quota_provider.core.reasons import RefusalCode
from airflow_quota_provider.core.task_key import TAG_PREFIX, TaskKey
from airflow_quota_provider.exceptions import (
    AdmissionRefused,
    CannotFit,
    InvalidPriority,
    ShareUnavailable,
)

__all__ = ["TAG_PREFIX", "TaskKey"]


def check_priority(priority: Any, job_name: str) -> None:
    if isinstance(priority, bool) or not isinstance(priority, int):
        ok = False
    else:
        ok = MIN_PRIORITY <= priority <= MAX_PRIORITY
    if not ok:
        raise InvalidPriority(
            job_name,
            RefusalCode.INVALID_PRIORITY.value,
            f"priority must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY} "
            f"(higher runs first), got {priority!r}",
            priority,
        )


def check_admission(
    config: QueueConfig, share: str, training_config: Mapping[str, Any], priority: int, name: str
) -> None:
    """Raise if the share is missing or DISABLED, or could never hold the job's instances."""
    demand = instances_of(training_config)
    assert isinstance(demand, dict)  # validate_training_config ran first
    check_demand(config, share, demand, priority, name)


def check_demand(
    config: QueueConfig, share: str, demand: Mapping[str, int], priority: int, name: str
) -> None:
    """Raise if the share is missing or DISABLED, or could never hold ``demand``.

    :raises ShareUnavailable, CannotFit, AdmissionRefused: with the core's reason.
    """
    refusal = check_submission(config, WaitingJob(name, share, dict(demand), priority))
    if refusal is None:
        return
    code, message = refusal.code, refusal.message
    if code in (RefusalCode.UNKNOWN_SHARE, RefusalCode.SHARE_DISABLED):
        raise ShareUnavailable(name, code.value, message, share, config.job_queue)
    found = config.share(share)
    if code in (
        RefusalCode.EXCEEDS_MAX_QUOTA,
        RefusalCode.EXCEEDS_QUEUE_CAPACITY,
        RefusalCode.UNKNOWN_UNIT,
    ):
        limits = share_limits(config, found) if found else {}
        holds = ", ".join(f"{n} {unit}" for unit, n in limits.items() if n) or "nothing"
        raise CannotFit(
            name, code.value, f"{message}; share {share} can hold {holds}", demand, limits
        )
    raise AdmissionRefused(name, code.value, message)


def build_request(
    *,
    identity: TaskKey,
    job_queue: str,
    quota_share: str,
    training_config: Mapping[str, Any],
    priority: int,
    job_name: str | None = None,
    preemption_retries: int | None = None,
    retry_attempts: int | None = None,
    attempt_timeout: int | None = None,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``SubmitServiceJob`` input; validates priority and training_config on the way."""
    name = job_name or identity.job_name()
    check_priority(priority, name)
    validate_training_config(training_config)
    request: dict[str, Any] = {
        "jobName": name,
        "jobQueue": job_queue,
        "quotaShareName": quota_share,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": json.dumps(dict(training_config), sort_keys=True),
        "schedulingPriority": priority,
        "tags": {**dict(tags or {}), **identity.tags()},
        "clientToken": identity.client_token(),
    }
    if preemption_retries is not None:
        request["preemptionConfiguration"] = {
            "preemptionRetriesBeforeTermination": preemption_retries
        }
    if retry_attempts is not None:
        request["retryStrategy"] = {"attempts": retry_attempts}
    if attempt_timeout is not None:
        request["timeoutConfig"] = {"attemptDurationSeconds": attempt_timeout}
    return request
