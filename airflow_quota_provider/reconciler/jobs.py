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

from botocore.exceptions import BotoCoreError, ClientError

from airflow_quota_provider.core.orphans import ExternalJob
from airflow_quota_provider.hooks.submission import TaskIdentity
from airflow_quota_provider.hooks.training_tries import TrainingTries

log = logging.getLogger(__name__)

OurJob = ExternalJob[TaskIdentity]

SERVICE_JOB_STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING")
"""AWS Batch statuses of a service job that is not over."""


class JobsUnknown(RuntimeError):
    """The jobs could not be listed, or one could not be stopped."""


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
            try:
                job = self.batch.describe_service_job(jobId=job_id)
            except ClientError as error:
                if error.response["Error"]["Code"] == "ClientException":
                    continue  # gone in between
                raise JobsUnknown(f"DescribeServiceJob {job_id}: {error}") from None
            except BotoCoreError as error:
                raise JobsUnknown(f"DescribeServiceJob {job_id}: {error}") from None
            identity = TaskIdentity.from_tags(job.get("tags") or {})
            if identity is not None and job.get("status") in SERVICE_JOB_STATUSES:
                created = float(job.get("createdAt") or 0) / 1000  # epoch milliseconds
                created = on_our_clock(created, answered_at(job), self.clock())
                jobs.append(ExternalJob("service job", job_id, identity, created))
        return jobs

    def stop(self, job: OurJob, reason: str) -> None:
        try:
            self.batch.terminate_service_job(jobId=job.job_id, reason=reason[:256])
        except (ClientError, BotoCoreError) as error:
            raise JobsUnknown(f"TerminateServiceJob {job.job_id}: {error}") from None

    def _job_ids(self) -> Iterator[str]:
        for queue in self.job_queues:
            for status in SERVICE_JOB_STATUSES:
                token: str | None = None
                while True:
                    extra = {"nextToken": token} if token else {}
                    try:
                        page = self.batch.list_service_jobs(
                            jobQueue=queue, jobStatus=status, maxResults=100, **extra
                        )
                    except (ClientError, BotoCoreError) as error:
                        raise JobsUnknown(f"ListServiceJobs of {queue}: {error}") from None
                    for summary in page.get("jobSummaryList", ()):
                        yield str(summary["jobId"])
                    token = page.get("nextToken")
                    if not token:
                        break


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
            try:
                tags = TrainingTries(self.sagemaker).tags(arn)
            except ClientError as error:
                if error.response["Error"]["Code"] == "ValidationException":
                    continue  # gone in between
                raise JobsUnknown(f"ListTags of {name}: {error}") from None
            except BotoCoreError as error:
                raise JobsUnknown(f"ListTags of {name}: {error}") from None
            identity = TaskIdentity.from_tags(tags)
            try_number = identity.try_of(name) if identity else None
            if identity is not None and try_number is not None:
                jobs.append(ExternalJob("training job", name, identity, created, try_number))
        return jobs

    def stop(self, job: OurJob, reason: str) -> None:
        try:
            self.sagemaker.stop_training_job(TrainingJobName=job.job_id)
        except ClientError as error:
            if error.response["Error"]["Code"] in ("ValidationException", "ResourceNotFound"):
                return  # stopped or ended in between
            raise JobsUnknown(f"StopTrainingJob {job.job_id}: {error}") from None
        except BotoCoreError as error:
            raise JobsUnknown(f"StopTrainingJob {job.job_id}: {error}") from None

    def _in_progress(self) -> Iterator[tuple[str, str, float]]:
        pages = TrainingTries(self.sagemaker).pages(StatusEquals="InProgress")
        while True:
            try:
                page = next(pages)
            except StopIteration:
                return
            except (ClientError, BotoCoreError) as error:
                raise JobsUnknown(f"ListTrainingJobs: {error}") from None
            answered, now = answered_at(page), self.clock()
            for summary in page.get("TrainingJobSummaries", ()):
                created = on_our_clock(summary["CreationTime"].timestamp(), answered, now)
                yield str(summary["TrainingJobName"]), str(summary["TrainingJobArn"]), created
