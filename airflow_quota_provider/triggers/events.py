"""The events of this provider's triggers: how a followed service job ended
(:class:`~airflow_quota_provider.triggers.batch.ServiceJobTrigger`), and that a share
could start a capacity (:class:`~airflow_quota_provider.triggers.capacity.QuotaCapacityTrigger`).
"""

from __future__ import annotations

from typing import Literal, TypedDict

Outcome = Literal["success", "failed", "preempted", "timeout", "error"]


class ServiceJobEvent(TypedDict):
    """How a followed service job ended (or why following it stopped).

    :param status: ``success`` (SUCCEEDED), ``failed`` (FAILED), ``preempted``
        (preempted while the task asked to stop at a preemption), ``timeout``
        (the task's wait limit ran out first) or ``error`` (the job's status
        could not be read ``max_poll_failures`` polls in a row).
    :param job_status: the service job's own status when the event fired.
    :param training_job_arns: the SageMaker training job of each attempt, in order.
    :param queued_seconds: time the job did not run (from creation to end, minus run time).
    :param run_seconds: the sum of its attempts' durations.
    """

    status: Outcome
    job_id: str
    job_arn: str
    job_name: str
    job_status: str
    status_reason: str | None
    attempts: int
    preemptions: int
    training_job_arns: list[str]
    queued_seconds: float
    run_seconds: float
    message: str


class CapacityEvent(TypedDict):
    """The share could start the capacity asked for.

    :param status: always ``success``: the trigger waits until then (the sensor's
        ``timeout`` ends a longer wait).
    :param headroom: units the share could start when the event fired.
    """

    status: Literal["success"]
    headroom: dict[str, int]


TrainingOutcome = Literal["success", "failed", "timeout", "error"]


class TrainingJobEvent(TypedDict):
    """How a followed SageMaker training job ended (or why following it stopped).

    :param status: ``success`` (Completed), ``failed`` (Failed or Stopped),
        ``timeout`` (the task's wait limit ran out first) or ``error`` (its status
        could not be read ``max_poll_failures`` polls in a row).
    :param training_job_status: the job's own status when the event fired.
    :param transitions_seen: how many of its SecondaryStatusTransitions were logged.
    """

    status: TrainingOutcome
    training_job_name: str
    training_job_status: str
    failure_reason: str | None
    transitions_seen: int
    message: str
