"""A training task's ``SubmitServiceJob`` request: checked, named and made idempotent.

Every check runs before anything is submitted, so a task that could never
run fails at once with what is wrong, instead of stalling at the head of its
share (AWS's ``MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_quota_provider.core.admission import check_submission
from airflow_quota_provider.core.jobs import WaitingJob
from airflow_quota_provider.core.model import MAX_PRIORITY, MIN_PRIORITY, QueueConfig
from airflow_quota_provider.core.reasons import RefusalCode
from airflow_quota_provider.exceptions import (
    AdmissionRefused,
    CannotFit,
    InvalidPriority,
    ShareUnavailable,
)
from airflow_quota_provider.hooks.training_config import instances_of, validate_training_config
from airflow_quota_provider.hooks.usage import share_limits

TAG_PREFIX = "airflow:"


@dataclass(frozen=True)
class TaskIdentity:
    """The task instance a job belongs to; a retried task has the same one."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int = -1

    def __str__(self) -> str:
        """``dag_id/run_id/task_id[map_index]``, as the pool manager names task instances."""
        mapped = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{self.dag_id}/{self.run_id}/{self.task_id}{mapped}"

    def client_token(self) -> str:
        """A 64-character SubmitServiceJob ``clientToken`` (AWS allows 1..64)."""
        key = json.dumps([self.dag_id, self.task_id, self.run_id, self.map_index])
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> TaskIdentity | None:
        """The task instance a job's ``airflow:*`` tags name; ``None`` without all of them
        (a job someone else made, never to be touched)."""
        try:
            return cls(
                tags[f"{TAG_PREFIX}dag_id"],
                tags[f"{TAG_PREFIX}task_id"],
                tags[f"{TAG_PREFIX}run_id"],
                int(tags[f"{TAG_PREFIX}map_index"]),
            )
        except (KeyError, ValueError):
            return None

    def tags(self) -> dict[str, str]:
        return {
            f"{TAG_PREFIX}dag_id": self.dag_id,
            f"{TAG_PREFIX}task_id": self.task_id,
            f"{TAG_PREFIX}run_id": self.run_id[:256],
            f"{TAG_PREFIX}map_index": str(self.map_index),
        }

    def training_job_name(self, try_number: int) -> str:
        """The SageMaker training job of one try of this task, named so a retried worker
        finds its own (idempotent by name) and the pool manager can look it up:
        ``<dag>-<task>-<hash of the task instance>-t<try>``, within SageMaker's 63 letters,
        digits and ``-`` (the readable parts cut short; the hash tells task instances apart).
        """
        digest = self.client_token()[:12]

        def part(text: str) -> str:
            return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:16].strip("-") or "x"

        return f"{part(self.dag_id)}-{part(self.task_id)}-{digest}-t{try_number}"

    def try_of(self, training_job_name: str) -> int | None:
        """The try whose :meth:`training_job_name` this is; ``None`` if it is none of ours."""
        head, _, number = training_job_name.rpartition("-t")
        if not head or not number.isdigit():
            return None
        try_number = int(number)
        return try_number if self.training_job_name(try_number) == training_job_name else None

    def job_name(self) -> str:
        """``dag-task[-index]`` within Batch's 128 letters, digits, ``-`` and ``_``."""
        index = f"-{self.map_index}" if self.map_index >= 0 else ""
        name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{self.dag_id}-{self.task_id}")
        return name[: 128 - len(index)] + index


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
    identity: TaskIdentity,
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
