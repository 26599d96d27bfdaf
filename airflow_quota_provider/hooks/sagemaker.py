"""SageMaker for the provider: the one way it makes a client, and the training jobs of a
task's tries.

Every SageMaker client of the provider is the ``conn`` of the amazon provider's
``SageMakerHook``: the connection's credentials, ``region_name`` or else the
connection's region, the SageMaker endpoint of the connection's extra
(``service_config: {sagemaker: {endpoint_url: ...}}``, else its ``endpoint_url``), the
botocore ``config`` and ``verify``. The pools training operator has that hook as its
own (``aws_hook_class``); a trigger builds it in a thread with :func:`sagemaker_hook`
(:func:`~airflow_quota_provider.hooks.connections.aws_hook`); a hook of another
service asks for its connection's with :func:`sagemaker_client`.

The amazon provider's hooks are imported only where a hook is made: Airflow imports a
trigger's module, which imports this one, on the triggerer's event loop.

Training jobs come one per try of a task instance.

A task that runs SageMaker training in a pools fleet names the job of each try
after the task instance and the try
(:meth:`~airflow_quota_provider.core.task_key.TaskKey.training_job_name`),
so a worker that died and came back finds its own job instead of creating a
second one, the pool manager can look up a preempted try's job, and the
reconciler can tell the task's jobs from anyone else's.

The pool manager tags a victim's training job with why it was preempted
(:data:`PREEMPTED_TAG`) before clearing the task, so the task's own log, and
anyone who reads the job in AWS, can say by whom and why.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from airflow_quota_provider.core.task_key import TaskKey

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsGenericHook
    from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook


def sagemaker_hook(**arguments: Any) -> SageMakerHook:
    """The amazon provider's ``SageMakerHook`` of ``arguments`` (``aws_conn_id``,
    ``region_name``, ``verify``, ``config``), imported here."""
    from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

    return SageMakerHook(**arguments)  # type: ignore[no-untyped-call]


def sagemaker_client(hook: AwsGenericHook[Any]) -> Any:
    """The SageMaker client of ``hook``'s connection, ``hook`` being of any AWS service.

    The connection is the one ``hook`` has read (it is not read again), so an endpoint
    ``hook`` was given in place of the connection's is SageMaker's too, unless the
    extra names SageMaker's own.
    """
    sagemaker = sagemaker_hook(aws_conn_id=hook.aws_conn_id)
    # the region, endpoint, botocore config and verify all come from the wrapper
    sagemaker.conn_config = hook.conn_config
    return sagemaker.conn


PAGE: Final = {"PageSize": 100}
"""SageMaker's largest page of training jobs and of tags."""

PREEMPTED_TAG: Final = "quota:preempted"
"""Set by the pool manager on a preempted try's training job: who preempted it and why."""

RUNNING_STATUSES: Final = frozenset({"InProgress", "Stopping"})
"""Training job statuses in which its instances are still taken."""


def not_found(error: Any) -> bool:
    """Whether a botocore ``ClientError`` says the training job does not exist.

    SageMaker answers an unknown name with a ``ValidationException``
    "Requested resource not found", and StopTrainingJob with ``ResourceNotFound``.
    """
    answer = error.response.get("Error", {})
    code = answer.get("Code")
    message = str(answer.get("Message", "")).lower()
    return code == "ResourceNotFound" or (code == "ValidationException" and "not found" in message)


def tag_value(text: str) -> str:
    """``text`` as a SageMaker tag value: 256 characters at most, of letters, digits,
    spaces and ``_ . : / = + - @`` (others become spaces)."""
    return re.sub(r"[^\w\s.:/=+\-@]", " ", text)[:256].strip()


class TrainingTries:
    """Create, find, stop and sum up the per-try training jobs of task instances.

    :param client: a boto3 SageMaker client.
    :param sleep: waits between status checks (injected by tests).
    """

    def __init__(self, client: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.sleep = sleep

    def job(self, name: str) -> dict[str, Any] | None:
        """``DescribeTrainingJob`` of ``name``; ``None`` if there is no such job."""
        from botocore.exceptions import ClientError

        try:
            return dict(self.client.describe_training_job(TrainingJobName=name))
        except ClientError as error:
            if not_found(error):
                return None
            raise

    def tags(self, arn: str) -> dict[str, str]:
        """All the job's tags, by its ARN (``ListTags``, every page)."""
        from airflow_quota_provider.aws_batch.paging import all_items

        tags = all_items(self.client, "ListTags", "Tags", ResourceArn=arn, PaginationConfig=PAGE)
        return {tag["Key"]: tag.get("Value", "") for tag in tags}

    def preemption(self, job: Mapping[str, Any]) -> str | None:
        """What the pool manager tagged the job with when it preempted its try, if it did."""
        return self.tags(job["TrainingJobArn"]).get(PREEMPTED_TAG)

    def tell(self, name: str, note: str) -> bool:
        """Tag the job ``name`` with why its try is preempted; ``False`` if there is none."""
        job = self.job(name)
        if job is None:
            return False
        self.client.add_tags(
            ResourceArn=job["TrainingJobArn"],
            Tags=[{"Key": PREEMPTED_TAG, "Value": tag_value(note)}],
        )
        return True

    def earlier(self, identity: TaskKey, try_number: int) -> list[dict[str, Any]]:
        """The training jobs of the task instance's tries before ``try_number``, oldest first
        (summaries of ``ListTrainingJobs``)."""
        if try_number <= 1:
            return []
        stem = identity.training_job_name(try_number).rpartition("-t")[0]
        found = []
        for summary in self.listed(NameContains=f"{stem}-t"):
            number = identity.try_of(summary["TrainingJobName"])
            if number is not None and number < try_number:
                found.append((number, summary))
        return [summary for _, summary in sorted(found, key=lambda pair: pair[0])]

    def listed(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """``ListTrainingJobs`` summaries with ``filters``, every page."""
        for page in self.pages(**filters):
            yield from page.get("TrainingJobSummaries", ())

    def pages(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """``ListTrainingJobs`` answers with ``filters``, one per page (each with its
        ``ResponseMetadata``, which says when SageMaker answered)."""
        from airflow_quota_provider.aws_batch.paging import all_pages

        return all_pages(self.client, "ListTrainingJobs", PaginationConfig=PAGE, **filters)

    def stop(
        self,
        name: str,
        wait_seconds: float,
        poll: float = 2.0,
        job: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Stop the job ``name`` if it runs and wait, at most ``wait_seconds``, until its
        instances are released; the job as last seen (``None`` if there is none).
        ``job``: its ``DescribeTrainingJob`` if the caller just read it."""
        from botocore.exceptions import ClientError

        job = dict(job) if job is not None else self.job(name)
        if job is None:
            return None
        if job["TrainingJobStatus"] == "InProgress":
            try:
                self.client.stop_training_job(TrainingJobName=name)
            except ClientError as error:  # it ended meanwhile
                if not (not_found(error) or _not_in_progress(error)):
                    raise
            job = self.job(name)
        deadline = time.monotonic() + wait_seconds
        while job is not None and job["TrainingJobStatus"] in RUNNING_STATUSES:
            if time.monotonic() >= deadline:
                return job
            self.sleep(poll)
            job = self.job(name)
        return job

    def summary(self, identity: TaskKey, try_number: int) -> dict[str, Any]:
        """The task instance's training across its tries, for XCom: ``attempts`` (jobs
        created), ``preemptions`` (earlier tries' jobs that were stopped),
        ``training_job_arns`` (oldest first), ``queued_seconds`` (from each job's creation
        to its training start: provisioning and download) and ``run_seconds`` (their
        training time)."""
        names = [s["TrainingJobName"] for s in self.earlier(identity, try_number)]
        names.append(identity.training_job_name(try_number))
        jobs = [job for name in names if (job := self.job(name)) is not None]
        queued = run = 0.0
        for job in jobs:
            created, started = job.get("CreationTime"), job.get("TrainingStartTime")
            ended = job.get("TrainingEndTime")
            if created is not None and started is not None:
                queued += (started - created).total_seconds()
            if started is not None and ended is not None:
                run += (ended - started).total_seconds()
        return {
            "attempts": len(jobs),
            "preemptions": sum(1 for job in jobs[:-1] if job["TrainingJobStatus"] == "Stopped"),
            "training_job_arns": [job["TrainingJobArn"] for job in jobs],
            "queued_seconds": round(queued, 3),
            "run_seconds": round(run, 3),
        }


def _not_in_progress(error: Any) -> bool:
    answer = error.response.get("Error", {})
    return answer.get("Code") == "ValidationException" and "status" in str(answer.get("Message"))
