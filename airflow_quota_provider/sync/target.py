"""What ``airflow-quota plan/apply`` is asked to make true: a quota config plus AWS names,
or a pools fleet.

The file is a quota config (see :mod:`airflow_quota_provider.core.config`).
With ``backend: airflow_pools`` it is a :class:`~airflow_quota_provider.airflow_pools.fleet.Fleet`
whose pools live in Airflow, and the keys below are refused. For AWS Batch it
may have three optional top-level keys naming the AWS resources around the job
queue:

- ``service_environment``: the SAGEMAKER_TRAINING service environment holding the
  queue's ``capacity`` (default ``<job_queue>-env``);
- ``scheduling_policy``: the scheduling policy with ``quotaSharePolicy`` FIFO
  (default ``<job_queue>-policy``);
- ``job_queue_priority``: the job queue's priority, 0 to 1000 (default 1).

The defaults are the names ``airflow-quota emulator --config`` creates, so a file
that works with the emulator plans as "no changes" against it. Every problem of
the file, of these keys and of the quota config alike, is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.config_file import load_mapping
from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.core.fields import Check, Fields, is_int, show
from airflow_quota_provider.core.model import Backend, QueueConfig
from airflow_quota_provider.exceptions import ConfigError, Problem

NAME_KEYS: Final = ("service_environment", "scheduling_policy", "job_queue_priority")
DEFAULT_QUEUE_PRIORITY: Final = 1
MAX_QUEUE_PRIORITY: Final = 1000
"""Batch's documented range of a job queue's ``priority``."""

_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_NAME_RULE = "1 to 128 letters, digits, hyphens (-) and underscores (_)"


@dataclass(frozen=True)
class SyncTarget:
    """A quota config and the names of the AWS resources it lives in."""

    config: QueueConfig
    service_environment: str
    scheduling_policy: str
    job_queue_priority: int = DEFAULT_QUEUE_PRIORITY

    @property
    def job_queue(self) -> str:
        return self.config.job_queue


def load_target(path: str | Path) -> SyncTarget | Fleet:
    """The target in the YAML or JSON file at ``path``; raises :class:`ConfigError`."""
    return parse_target(load_mapping(path), source=str(path))


def parse_target(data: Mapping[str, Any], source: str | None = None) -> SyncTarget | Fleet:
    """Validate the quota config and the AWS names together; all problems in one error."""
    problems: list[Problem] = []
    environment = policy = None
    priority = DEFAULT_QUEUE_PRIORITY
    if data.get("backend") == Backend.AIRFLOW_POOLS.value:
        problems += [_batch_only(key) for key in NAME_KEYS if key in data]
    else:
        fields = Fields(data, "", problems)
        environment = fields.get("service_environment", _name("a service environment name"), None)
        policy = fields.get("scheduling_policy", _name("a scheduling policy name"), None)
        priority = fields.get("job_queue_priority", _priority, DEFAULT_QUEUE_PRIORITY)
    config: QueueConfig | None = None
    try:
        config = parse_config(data, extra_keys=NAME_KEYS, source=source)
    except ConfigError as error:
        # The config's own problems come first: they are usually the ones to fix.
        problems[:0] = error.problems
    if problems or config is None:
        raise ConfigError(problems, source)
    if config.backend is Backend.AIRFLOW_POOLS:
        return Fleet.of(config)
    return SyncTarget(
        config=config,
        service_environment=environment or f"{config.job_queue}-env",
        scheduling_policy=policy or f"{config.job_queue}-policy",
        job_queue_priority=priority,
    )


def _batch_only(key: str) -> Problem:
    return Problem(
        key,
        f"is only for backend {Backend.AWS_BATCH.value} (a resource of the AWS Batch job "
        f"queue); this config's backend is {Backend.AIRFLOW_POOLS.value}, whose pools are "
        "named by pools",
    )


def _name(what: str) -> Check:
    def check(value: object, path: str) -> list[Problem]:
        if isinstance(value, str) and 0 < len(value) <= 128 and set(value) <= _NAME_CHARACTERS:
            return []
        return [Problem(path, f"must be {what} of {_NAME_RULE}, got {show(value)}")]

    return check


def _priority(value: object, path: str) -> list[Problem]:
    if is_int(value) and 0 <= value <= MAX_QUEUE_PRIORITY:
        return []
    want = f"must be an integer from 0 to {MAX_QUEUE_PRIORITY} (the job queue's priority)"
    return [Problem(path, f"{want}, got {show(value)}")]
