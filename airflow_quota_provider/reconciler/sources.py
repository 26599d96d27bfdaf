"""Our jobs outside Airflow: the ones carrying a task instance's ``airflow:*`` tags.

A job without all of them was not started by this provider and is never listed,
so never touched. Only jobs that still hold (or wait for) capacity are listed.

A job's creation time is the service's, by the service's clock; the reconciler
measures grace by its own. Each job's creation is moved onto the reconciler's
clock by how far the service's clock was from it when the service answered (the
answer's HTTP ``Date``), so the two agree whatever the skew: the local endpoint
at ``--time-scale 60`` runs its clock ahead of the wall clock, as a real
service's clock may drift from the machine's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from airflow_quota_provider.aws_batch.errors import AwsCallFailed, aws_call
from airflow_quota_provider.aws_batch.paging import all_items
from airflow_quota_provider.aws_batch.statuses import ACTIVE_STATUSES
from airflow_quota_provider.core.orphans import ExternalJob
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.hooks.sagemaker import TrainingTries

log = logging.getLogger(__name__)

OurJob = ExternalJob[TaskKey]

PAGE_SIZE = 100
"""Service job summaries asked for per ``ListServiceJobs`` page."""


class JobsUnknown(AwsCallFailed):
    """The jobs could not be listed, or one could not be stopped: ``operation`` says which
    call (and of what), ``code`` and ``message`` what AWS answered."""


class JobSource(Protocol):
    """Lists our live jobs of one kind and stops one."""

    def live(self) -> list[OurJob]: ...

    def stop(self, job: OurJob, reason: str) -> None: ...


def answered_at(answer: Mapping[str, Any]) -> float | None:
    """When a service answered, by its own clock (seconds since the epoch, whole seconds):
    the ``Date`` of its HTTP answer; ``None`` when it sent none that can be read."""
    headers = (answer.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    date = headers.get("date")
    if not date:
        return None
    try:
        return parsedate_to_datetime(str(date)).timestamp()
    except (TypeError, ValueError):
        return None


def on_our_clock(stamp: float, answered: float | None, now: float) -> float:
    """``stamp``, a time by the clock of a service that answered at ``answered`` (by its
    clock) and ``now`` (by ours), as a time by ours; never after ``now`` (the ``Date``
    is in whole seconds). Without ``answered``, the clocks are taken to agree."""
    if answered is None:
        return stamp
    return min(now, stamp + now - answered)


class ServiceJobs:
    """Our service jobs in AWS Batch job queues.

    :param clock: the reconciler's clock, which creation times are moved onto.
    """

    def __init__(
        self,
        batch: Any,
        job_queues: tuple[str, ...],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.batch = batch
        self.job_queues = job_queues
        self.clock = clock

    def live(self) -> list[OurJob]:
        jobs: list[OurJob] = []
        for job_id in self._job_ids():
            job = self._described(job_id)
            if job is None:
                continue
            identity = TaskKey.from_tags(job.get("tags") or {})
            if identity is not None and job.get("status") in ACTIVE_STATUSES:
                created = float(job.get("createdAt") or 0) / 1000  # epoch milliseconds
                created = on_our_clock(created, answered_at(job), self.clock())
                jobs.append(ExternalJob("service job", job_id, identity, created))
        return jobs

    def stop(self, job: OurJob, reason: str) -> None:
        with aws_call(f"TerminateServiceJob {job.job_id}", JobsUnknown):
            self.batch.terminate_service_job(jobId=job.job_id, reason=reason[:256])

    def _described(self, job_id: str) -> dict[str, Any] | None:
        """``DescribeServiceJob``; ``None`` if the job is gone in between."""
        try:
            with aws_call(f"DescribeServiceJob {job_id}", JobsUnknown):
                return dict(self.batch.describe_service_job(jobId=job_id))
        except JobsUnknown as error:
            if error.code == "ClientException":
                return None
            raise

    def _job_ids(self) -> Iterator[str]:
        for queue in self.job_queues:
            with aws_call(f"ListServiceJobs of {queue}", JobsUnknown):
                for status in ACTIVE_STATUSES:
                    for summary in all_items(
                        self.batch,
                        "ListServiceJobs",
                        "jobSummaryList",
                        jobQueue=queue,
                        jobStatus=status,
                        PaginationConfig={"PageSize": PAGE_SIZE},
                    ):
                        yield str(summary["jobId"])


class TrainingJobs:
    """Our SageMaker training jobs created directly, one per try of a task.

    A training job is ours when its tags name a task instance and its name is the
    one a try of that task gives its job (so AWS Batch's own training jobs, and
    anyone else's, are left alone).

    :param clock: the reconciler's clock, which creation times are moved onto.
    """

    def __init__(self, sagemaker: Any, clock: Callable[[], float] = time.time) -> None:
        self.sagemaker = sagemaker
        self.clock = clock

    def live(self) -> list[OurJob]:
        jobs: list[OurJob] = []
        for name, arn, created in self._in_progress():
            tags = self._tags(name, arn)
            if tags is None:
                continue
            identity = TaskKey.from_tags(tags)
            try_number = identity.try_of(name) if identity else None
            if identity is not None and try_number is not None:
                jobs.append(ExternalJob("training job", name, identity, created, try_number))
        return jobs

    def stop(self, job: OurJob, reason: str) -> None:
        try:
            with aws_call(f"StopTrainingJob {job.job_id}", JobsUnknown):
                self.sagemaker.stop_training_job(TrainingJobName=job.job_id)
        except JobsUnknown as error:
            if error.code not in ("ValidationException", "ResourceNotFound"):
                raise
            # stopped or ended in between

    def _tags(self, name: str, arn: str) -> dict[str, str] | None:
        """The job's tags; ``None`` if the job is gone in between."""
        try:
            with aws_call(f"ListTags of {name}", JobsUnknown):
                return TrainingTries(self.sagemaker).tags(arn)
        except JobsUnknown as error:
            if error.code == "ValidationException":
                return None
            raise

    def _in_progress(self) -> Iterator[tuple[str, str, float]]:
        with aws_call("ListTrainingJobs", JobsUnknown):
            for page in TrainingTries(self.sagemaker).pages(StatusEquals="InProgress"):
                answered, now = answered_at(page), self.clock()
                for summary in page.get("TrainingJobSummaries", ()):
                    created = on_our_clock(summary["CreationTime"].timestamp(), answered, now)
                    yield str(summary["TrainingJobName"]), str(summary["TrainingJobArn"]), created
