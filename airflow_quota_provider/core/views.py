"""The read model: what the GPU Quotas view, ``airflow-quota status`` and the metrics show
of a fleet, as plain frozen records.

The same records are the JSON of the view's API (FastAPI documents them in
its OpenAPI schema) and of ``airflow-quota status --json``. Times are epoch
milliseconds of the backend's clock (AWS's, as its answers report it);
capacity is in instances.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_quota_provider.core.occupancy import Occupancy


@dataclass(frozen=True)
class UnitCapacity:
    """One instance type of a queue: its capacity, what runs on it, what no share owns."""

    unit: str
    capacity: int
    used: int
    unowned: int


@dataclass(frozen=True)
class ShareUnit(Occupancy):
    """One share's view of one instance type: :class:`~airflow_quota_provider.core.Occupancy`'s
    figures, and ``limit``, the most the share may ever hold, borrowing included."""

    unit: str
    limit: int


@dataclass(frozen=True)
class ShareView:
    """One share: how it shares, what it holds per instance type, its jobs.

    ``borrow_limit`` is AWS's percent (-1 unlimited) for a LEND_AND_BORROW share
    and ``None`` for a LEND or RESERVE one, which never borrows; ``borrowing``
    says the same in words (``borrow limit 50%``, ``does not borrow``).
    """

    name: str
    strategy: str
    borrow_limit: int | None
    borrowing: str
    in_share_preemption: bool
    state: str
    units: list[ShareUnit]
    running: int
    waiting: int
    waiting_instances: dict[str, int]

    @property
    def borrowed(self) -> int:
        return sum(u.borrowed for u in self.units)

    @property
    def lent(self) -> int:
        return sum(u.lent for u in self.units)


@dataclass(frozen=True)
class TaskLink:
    """The Airflow task instance a job was submitted by (from its ``airflow:*`` tags).

    ``path`` is relative to the Airflow UI's base URL.
    """

    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    path: str


@dataclass(frozen=True)
class NextVictim:
    """This running job would be preempted first if ``by_share`` asked for all it owns now.

    Decided by the scheduling core on the queue as AWS reports it; ``kind``
    and ``message`` are the core's.
    """

    by_share: str
    kind: str
    message: str


@dataclass(frozen=True)
class DurationView:
    """How long a job is expected to run in all (seconds of work), and what that rests on
    (:class:`~airflow_quota_provider.core.durations.DurationEstimate`)."""

    likely_seconds: float
    low_seconds: float
    high_seconds: float
    basis: str
    guess: bool


@dataclass(frozen=True)
class ExpectedEnd:
    """When a running job is expected to end (epoch ms): its duration estimate past the
    work it has done."""

    likely: int
    earliest: int
    latest: int
    guess: bool


@dataclass(frozen=True)
class AwaitedEnd:
    """A job whose end makes room for a waiting one, and when it ends in the forecast."""

    job_id: str
    at: int


@dataclass(frozen=True)
class PredictedStart:
    """When a waiting job is expected to start, from
    :func:`~airflow_quota_provider.core.forecast.forecast` (epoch ms).

    ``likely`` is ``None`` when the forecast does not start it (``no_start_code`` and
    ``no_start`` say why); ``latest`` is ``None`` when some play never starts it.
    ``text`` says it for people (``in about 25 min, between 10 and 40 min``); ``basis``
    what it rests on; ``guess`` that it rests on at least one duration with no history.
    ``waits_for``: the ends that make room for it; ``victims``: the jobs preempted for it.
    """

    likely: int | None
    earliest: int | None
    latest: int | None
    text: str
    basis: str
    guess: bool
    ends_before: int = 0
    borrowing: bool = False
    waits_for: list[AwaitedEnd] = field(default_factory=list)
    victims: list[str] = field(default_factory=list)
    no_start_code: str | None = None
    no_start: str | None = None


@dataclass(frozen=True)
class JobView:
    """One service job: waiting (RUNNABLE, with its place and reason) or holding capacity.

    ``reason_code``/``reason`` split AWS's ``statusReason`` (``CODE: message``).
    ``position`` is its 1-based place in the queue's dispatch order
    (``GetJobQueueSnapshot``), ``None`` beyond the snapshot's first 100.
    ``borrowing``: the job holds capacity beyond what its share owns (see
    :mod:`~airflow_quota_provider.aws_batch.job_views`). ``priority``, ``tags`` and
    ``task`` are known only for jobs the backend described.
    """

    job_id: str
    name: str
    arn: str
    share: str
    status: str
    reason_code: str | None
    reason: str | None
    priority: int | None
    demand: dict[str, int]
    created_at: int
    started_at: int | None
    age_seconds: float
    position: int | None
    borrowing: bool
    preemptions: int
    next_victim: NextVictim | None
    task: TaskLink | None
    console_url: str | None
    """The job in the AWS console; ``None`` for a task of a pools fleet (no AWS job)."""
    preemptible: bool = True
    """``False`` for a task of a pools fleet that is never preempted (its share or the
    task says its work cannot be stopped from outside)."""
    duration: DurationView | None = None
    """How long it is expected to run in all, when the view made a forecast."""
    predicted_start: PredictedStart | None = None
    """A waiting job's forecast start (see :mod:`~airflow_quota_provider.core.predictions`)."""
    expected_end: ExpectedEnd | None = None
    """A running job's expected end."""


@dataclass(frozen=True)
class PreemptionEvent:
    """One preempted attempt (from the job's ``preemptionSummary``).

    ``preemptor`` is the job that caused it when the reason names one (the
    reasons of this provider's engine do; AWS's own do not). ``work_lost``
    is seconds of ``work_lost_unit`` (instances of an AWS Batch job; a pools
    fleet's unit, e.g. ``gpu``, for a task) since the attempt's last checkpoint
    (the interval as :mod:`airflow_quota_provider.checkpoints` reads it: the
    job's tag, else the endpoint's default), or since it started when the job
    does not checkpoint (no ``CheckpointConfig.S3Uri``, or a pools task; then
    ``checkpointed`` is false).
    """

    job_id: str
    name: str
    share: str
    started_at: int
    stopped_at: int
    kind: str | None
    preemptor: str | None
    reason: str
    work_lost: float
    checkpointed: bool
    training_job: str
    task: TaskLink | None
    console_url: str | None
    """The job in the AWS console; ``None`` for a task of a pools fleet."""
    preemptor_name: str | None = None
    preemptor_share: str | None = None
    work_lost_unit: str = "instance"


@dataclass(frozen=True)
class UtilizationPoint:
    """Average instances in use per type over ``[start, start + seconds)``."""

    start: int
    seconds: int
    used: dict[str, float]


@dataclass(frozen=True)
class QueueSummary:
    """A job queue, or a pools fleet (``kind``: ``job queue`` or ``fleet``)."""

    name: str
    arn: str
    state: str
    kind: str = "job queue"


@dataclass(frozen=True)
class QueueView:
    """Everything the view shows of one job queue, read at ``now``."""

    name: str
    arn: str
    state: str
    now: int
    capacity: list[UnitCapacity]
    shares: list[ShareView]
    waiting: list[JobView]
    running: list[JobView]
    events: list[PreemptionEvent]
    utilization: list[UtilizationPoint] = field(default_factory=list)
    """Empty where the backend keeps no history (a pools fleet): the page then has no
    utilization panel."""
    kind: str = "job queue"
    """What the view calls it: ``job queue`` (AWS Batch) or ``fleet`` (a pools fleet)."""
    alerts: list[str] = field(default_factory=list)
    """What keeps the fleet from being run as the view shows, e.g. a change Airflow
    refused the pool manager: ``status``, ``explain`` and the page show them first."""
    forecast_basis: str = ""
    """How the waiting jobs' predicted starts and their ranges are made; empty without a
    forecast."""

    def jobs(self) -> list[JobView]:
        return [*self.waiting, *self.running]

    def job(self, job_id: str) -> JobView | None:
        return next((job for job in self.jobs() if job.job_id == job_id), None)


@dataclass(frozen=True)
class Explanation:
    """Why a job waits (with the numbers), why it was preempted, or what it is doing."""

    job: JobView
    summary: str
    details: list[str]
    preemptions: list[PreemptionEvent]
