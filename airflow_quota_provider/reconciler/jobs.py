"""Our jobs outside Airflow: the ones carrying a task instance's ``airflow:*`` tags.

A job without all of them was not started by this provider and is never listed,
so never touched. Only jobs that still hold (or wait for) capacity are listed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
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


class ServiceJobs:
    """Our service jobs in AWS Batch job queues."""

    def __init__(self, batch: Any, job_queues: tuple[str, ...]) -> None:
        self.batch = batch
        self.job_queues = job_queues

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
    """

    def __init__(self, sagemaker: Any) -> None:
        self.sagemaker = sagemaker

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
        listed = TrainingTries(self.sagemaker).listed(StatusEquals="InProgress")
        while True:
            try:
                summary = next(listed)
            except StopIteration:
                return
            except (ClientError, BotoCoreError) as error:
                raise JobsUnknown(f"ListTrainingJobs: {error}") from None
            created = summary["CreationTime"].timestamp()
            yield str(summary["TrainingJobName"]), str(summary["TrainingJobArn"]), created
