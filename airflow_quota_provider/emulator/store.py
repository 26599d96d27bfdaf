"""The emulated account's resources, in memory (and, with ``--state``, in :mod:`.state_file`).

Records are mutable dataclasses, unlike the core's frozen ones: they are the
emulator's state, changed in place under the emulator's single lock. Each
is keyed by ARN; lookups accept a name or an ARN, as Batch does. Each kind
lives in a :class:`~.tables.Table`, which notes the records reached, so a
save encodes only those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from airflow_quota_provider.core.model import QueueConfig, Resources
from airflow_quota_provider.emulator.tables import Table


@dataclass(slots=True)
class ServiceEnvironment:
    name: str
    arn: str
    state: str
    capacity_limits: list[dict[str, Any]]
    tags: dict[str, str]


@dataclass(slots=True)
class SchedulingPolicy:
    name: str
    arn: str
    quota_share_policy: dict[str, Any] | None
    fairshare_policy: dict[str, Any] | None
    tags: dict[str, str]


@dataclass(slots=True)
class JobQueue:
    name: str
    arn: str
    state: str
    priority: int
    job_queue_type: str
    scheduling_policy_arn: str | None
    service_environment_order: list[dict[str, Any]]
    time_limit_actions: list[dict[str, Any]]
    tags: dict[str, str]
    extensions: QueueConfig | None = None
    """The ``--config`` file's settings AWS has no field for (FAIR, min runtime, weights)."""


@dataclass(slots=True)
class QuotaShare:
    name: str
    arn: str
    job_queue_arn: str
    capacity_limits: list[dict[str, Any]]
    sharing: dict[str, Any]
    preemption: dict[str, Any]
    state: str
    tags: dict[str, str]


@dataclass(slots=True)
class Attempt:
    """One try of a service job: one SageMaker training job."""

    training_job_arn: str
    training_job_name: str
    started_at: int
    stopped_at: int | None = None
    status_reason: str | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "serviceResourceId": {"name": "TrainingJobArn", "value": self.training_job_arn},
            "startedAt": self.started_at,
            "stoppedAt": self.stopped_at,
            "statusReason": self.status_reason,
        }


@dataclass(slots=True)
class ServiceJob:
    id: str
    arn: str
    name: str
    queue_arn: str
    share: str
    payload: str
    request: dict[str, Any]
    demand: Resources
    priority: int
    created_at: int
    sequence: int
    """Submission order, which timestamps cannot tell apart when the clock stands still."""
    submitted: float
    """Seconds, the core's clock: a requeued job keeps its place by it."""
    retry_strategy: dict[str, Any] | None
    preemption_config: dict[str, Any] | None
    timeout_config: dict[str, Any] | None
    tags: dict[str, str]
    share_identifier: str | None = None
    status: str = "SUBMITTED"
    status_reason: str | None = None
    scheduled_at: int | None = None
    started_at: int | None = None
    stopped_at: int | None = None
    runnable_since: int | None = None
    attempts: list[Attempt] = field(default_factory=list)
    preemptions: int = 0
    recent_preempted: list[Attempt] = field(default_factory=list)
    failed_attempts: int = 0
    is_terminated: bool = False
    stop_cause: str | None = None
    """Why the current training job is being stopped: ``preempt``, ``terminate``, ``timeout``."""
    stop_detail: str | None = None
    """The status reason the stopped attempt gets."""
    preemption_fails: bool = False

    @property
    def done(self) -> bool:
        return self.status in ("SUCCEEDED", "FAILED")


@dataclass(slots=True)
class TrainingJob:
    name: str
    arn: str
    request: dict[str, Any]
    tags: dict[str, str]
    created: float
    duration: float
    fail_after: float | None
    checkpoint_uri: str | None
    checkpoint_interval: float
    instances: Resources
    owner: str | None = None
    """The service job this training job is an attempt of, if Batch created it."""
    status: str = "InProgress"
    secondary: str = "Starting"
    modified: float = 0.0
    transitions: list[dict[str, Any]] = field(default_factory=list)
    training_start: float | None = None
    training_end: float | None = None
    resumed_work: float = 0.0
    failure_reason: str | None = None
    serial: int = 0
    """Bumped at every transition, so a timer set for an earlier phase is ignored."""
    capacity_error: bool = False
    """It will find no capacity and fail at the end of ``Starting`` (``--capacity-error-rate``)."""


@dataclass
class Store:
    environments: Table[ServiceEnvironment] = field(default_factory=Table)
    policies: Table[SchedulingPolicy] = field(default_factory=Table)
    queues: Table[JobQueue] = field(default_factory=Table)
    shares: Table[QuotaShare] = field(default_factory=Table)
    jobs: Table[ServiceJob] = field(default_factory=Table)
    client_tokens: Table[tuple[str, str]] = field(default_factory=Table)
    """clientToken -> (fingerprint of the request, job id)."""
    training_jobs: Table[TrainingJob] = field(default_factory=Table)
    """Keyed by name, as SageMaker's API is."""
    last_submitted: float = 0.0
    checkpoints: Table[float] = field(default_factory=Table)
    """Checkpoint S3 URI -> seconds of work saved there."""

    def environment(self, name_or_arn: str) -> ServiceEnvironment | None:
        return _find(self.environments, name_or_arn)

    def policy(self, name_or_arn: str) -> SchedulingPolicy | None:
        return _find(self.policies, name_or_arn)

    def queue(self, name_or_arn: str) -> JobQueue | None:
        return _find(self.queues, name_or_arn)

    def shares_of(self, queue_arn: str) -> list[QuotaShare]:
        return [s for s in self.shares.values() if s.job_queue_arn == queue_arn]

    def share_named(self, queue_arn: str, name: str) -> QuotaShare | None:
        return next((s for s in self.shares_of(queue_arn) if s.name == name), None)

    def jobs_of(self, queue_arn: str) -> list[ServiceJob]:
        return [j for j in self.jobs.values() if j.queue_arn == queue_arn]


class _Named(Protocol):
    name: str


R = TypeVar("R", bound=_Named)


def _find(records: Mapping[str, R], name_or_arn: str) -> R | None:
    found = records.get(name_or_arn)
    if found is not None:
        return found
    return next((r for r in records.values() if r.name == name_or_arn), None)
