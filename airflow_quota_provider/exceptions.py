"""Errors raised by airflow-quota-provider.

A ``permanent`` error is one no retry can change: an Airflow task raising it
fails at once, retries unused (:mod:`airflow_quota_provider.refusals` raises an
``AirflowFailException`` from it, so that this module imports no Airflow). Every
error survives pickling with its fields.

::

    QuotaError                      base of everything raised here
    ├── ConfigError(ValueError)     a quota config is invalid; .problems lists every one
    ├── ScenarioError(ValueError)   a scenario or trace file is invalid; .problems as above
    ├── AdmissionRefused            a job can never run in its share; .code, .message (permanent)
    │   ├── ShareUnavailable        the share does not exist (permanent) or is DISABLED;
    │   │                           .share, .job_queue
    │   ├── CannotFit               more instances than the share could ever hold; .demand, .limits
    │   └── InvalidPriority(ValueError)  outside 0..9999; .priority
    ├── InvalidTrainingConfig(ValueError)  not a valid CreateTrainingJob request; .problems
    │                               (permanent)
    └── ServiceJobError             a submitted service job did not succeed; .job_id, .status_reason
        ├── ServiceJobFailed        it ended FAILED; .failure_reason (SageMaker's)
        │   └── PreemptionRetriesExhausted  FAILED after its last allowed preemption
        ├── ServiceJobPreempted     preempted while the task asked to stop at a preemption
        ├── ServiceJobTimeout       still not finished after the task's wait limit
        └── PollingFailed           its status could not be read max_poll_failures polls in a row
    ViewError                       the GPU Quotas view or ``airflow-quota status`` cannot answer
    ├── UnknownQueue(LookupError)   no such job queue; .job_queue, .known
    ├── UnknownJob(LookupError)     no such service job; .job_id, .searched
    ├── AmbiguousJob(LookupError)   a name several jobs have; .name, .candidates
    └── HistoryNotRecorded          no usage history is recorded of this fleet yet; .fleet, .why
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_SHARE_DISABLED = "SHARE_DISABLED"
"""``RefusalCode.SHARE_DISABLED`` (:mod:`airflow_quota_provider.core.reasons`); the core's
package imports this module, so this one cannot import the core."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, at a field path such as ``shares[1].borrow_limit``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class QuotaError(Exception):
    """Base of all errors of this package.

    ``permanent``: no retry can succeed (a task raising it fails at once; see
    :mod:`airflow_quota_provider.refusals`). Every error pickles with its fields
    (Airflow sends exceptions between processes), whatever its constructor takes.
    """

    permanent: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(kind: type[QuotaError], args: tuple[Any, ...], fields: dict[str, Any]) -> QuotaError:
    """An unpickled error: its message and fields as they were, its ``__init__`` not run again
    (each class's takes other arguments than the message it passes on)."""
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(fields)
    return error


class _ProblemsError(QuotaError, ValueError):
    what = "input"

    def __init__(self, problems: Sequence[Problem], source: str | None = None) -> None:
        self.problems = tuple(problems)
        self.source = source
        where = f" in {source}" if source else ""
        count = len(self.problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"{count} {noun} with the {self.what}{where}:\n{lines}")


class ConfigError(_ProblemsError):
    """A quota configuration is invalid. All its problems are in ``problems``."""

    what = "quota config"


class ScenarioError(_ProblemsError):
    """A scenario or trace is invalid. All its problems are in ``problems``."""

    what = "scenario"


class AdmissionRefused(QuotaError):
    """A job was refused at submission because it could never run.

    :param code: a :class:`~airflow_quota_provider.core.reasons.RefusalCode` value.
    """

    permanent = True

    def __init__(self, job_id: str, code: str, message: str) -> None:
        self.job_id = job_id
        self.code = code
        self.message = message
        super().__init__(f"job {job_id} refused ({code}): {message}")


class ShareUnavailable(AdmissionRefused):
    """The quota share does not exist in the job queue, or is DISABLED.

    Only a missing share is ``permanent``: a DISABLED one may be enabled again.
    """

    def __init__(self, job_name: str, code: str, message: str, share: str, job_queue: str) -> None:
        self.share = share
        self.job_queue = job_queue
        super().__init__(job_name, code, message)
        self.permanent = code != _SHARE_DISABLED


class CannotFit(AdmissionRefused):
    """The job asks for more instances than its share could ever hold.

    :param demand: instances per type the job needs.
    :param limits: the most of each type the share may hold, borrowing included.
    """

    def __init__(
        self,
        job_name: str,
        code: str,
        message: str,
        demand: Mapping[str, int],
        limits: Mapping[str, int],
    ) -> None:
        self.demand = dict(demand)
        self.limits = dict(limits)
        super().__init__(job_name, code, message)


class InvalidPriority(AdmissionRefused, ValueError):
    """A scheduling priority outside 0..9999."""

    def __init__(self, job_name: str, code: str, message: str, priority: object) -> None:
        self.priority = priority
        super().__init__(job_name, code, message)


class InvalidTrainingConfig(QuotaError, ValueError):
    """``training_config`` is not a valid SageMaker ``CreateTrainingJob`` request."""

    permanent = True

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        noun = "problem" if len(self.problems) == 1 else "problems"
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(
            f"{len(self.problems)} {noun} with training_config (CreateTrainingJob):\n{lines}"
        )


class ServiceJobError(QuotaError):
    """A submitted service job did not succeed; the message carries the last status reason."""

    def __init__(self, message: str, job_id: str, status_reason: str | None) -> None:
        self.job_id = job_id
        self.status_reason = status_reason
        super().__init__(message)


class ServiceJobFailed(ServiceJobError):
    """The service job ended FAILED; ``failure_reason`` is SageMaker's for its last attempt."""

    def __init__(
        self, message: str, job_id: str, status_reason: str | None, failure_reason: str | None
    ) -> None:
        self.failure_reason = failure_reason
        super().__init__(message, job_id, status_reason)


class PreemptionRetriesExhausted(ServiceJobFailed):
    """The service job was preempted once more than ``preemption_retries`` allows."""


class ServiceJobPreempted(ServiceJobError):
    """The service job was preempted and the task was asked to stop at a preemption."""


class ServiceJobTimeout(ServiceJobError):
    """The service job had not finished when the task's wait limit ran out."""


class TrainingJobError(QuotaError):
    """A try's SageMaker training job (run directly, in a pools fleet) did not complete."""

    def __init__(self, message: str, training_job_name: str, failure_reason: str | None) -> None:
        self.training_job_name = training_job_name
        self.failure_reason = failure_reason
        super().__init__(message)


class TrainingJobFailed(TrainingJobError):
    """The training job ended Failed, or Stopped by someone else than this task."""


class TrainingJobTimeout(TrainingJobError):
    """The training job had not ended when the task's wait limit ran out."""


class TrainingJobUnreadable(TrainingJobError):
    """The training job's status could not be read ``max_poll_failures`` polls in a row."""


class ViewError(QuotaError):
    """The GPU Quotas view (or ``airflow-quota status``) cannot answer."""


class UnknownQueue(ViewError, LookupError):
    """No job queue of that name; ``known`` lists the queues there are."""

    def __init__(self, job_queue: str, known: Sequence[str]) -> None:
        self.job_queue = job_queue
        self.known = tuple(known)
        listed = ", ".join(self.known) or "none"
        super().__init__(f"job queue {job_queue!r} does not exist; the job queues are: {listed}")


class UnknownJob(ViewError, LookupError):
    """No service job has that id or ARN (nor, where ``searched`` names the job queues
    looked in, that name)."""

    def __init__(self, job_id: str, searched: Sequence[str] = ()) -> None:
        self.job_id = job_id
        self.searched = tuple(searched)
        where = ""
        if self.searched:
            noun = "job queue" if len(self.searched) == 1 else "job queues"
            where = f": no job of {noun} {', '.join(self.searched)} has that id, ARN or name"
        super().__init__(f"service job {job_id!r} does not exist{where}")


@dataclass(frozen=True)
class JobCandidate:
    """A service job a name could mean."""

    job_id: str
    status: str
    job_queue: str

    def __str__(self) -> str:
        return f"{self.job_id} ({self.status}, job queue {self.job_queue})"


class AmbiguousJob(ViewError, LookupError):
    """More than one service job has the name; ``candidates`` are they, newest first."""

    def __init__(self, name: str, candidates: Sequence[JobCandidate]) -> None:
        self.name = name
        self.candidates = tuple(candidates)
        listed = "; ".join(str(c) for c in self.candidates)
        super().__init__(
            f"{len(self.candidates)} service jobs are named {name!r}; "
            f"give the id (or ARN) of one: {listed}"
        )


class HistoryNotRecorded(ViewError):
    """No usage history of a pools fleet is recorded in its pool manager's database yet
    (``why`` says what is missing): it may come once a manager of this version cycles, so
    the view answers 503."""

    def __init__(self, fleet: str, why: str) -> None:
        self.fleet = fleet
        self.why = why
        super().__init__(f"no usage history of fleet {fleet} is recorded: {why}")

    def __reduce__(self) -> tuple[type[HistoryNotRecorded], tuple[str, str]]:
        return (type(self), (self.fleet, self.why))


class PollingFailed(ServiceJobError):
    """The job's status could not be read ``max_poll_failures`` polls in a row.

    The job itself may still be running: a retry of the task reattaches to it.
    """
