"""The AWS Batch API of quota shares and service jobs, through an Airflow AWS connection."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.utils.connection_wrapper import AwsConnectionWrapper

from airflow_quota_provider.aws_batch.change_tags import queue_past
from airflow_quota_provider.aws_batch.paging import all_items
from airflow_quota_provider.aws_batch.statuses import (
    ACTIVE_STATUSES,
    HOLDING_STATUSES,
    TERMINAL_STATUSES,
)
from airflow_quota_provider.aws_batch.translate import queue_config_from_aws, usage_from_jobs
from airflow_quota_provider.core.config_timeline import QueuePast
from airflow_quota_provider.core.headroom import headroom
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.occupancy import Occupancy, occupancy
from airflow_quota_provider.hooks.sagemaker import sagemaker_client


class BatchQuotaHook(AwsBaseHook):
    """Interact with AWS Batch service jobs, job queues and quota shares.

    A thin wrapper of ``boto3.client("batch")`` plus the quota views the
    provider needs: a queue's :class:`~airflow_quota_provider.core.model.QueueConfig`
    and each share's own, borrowed, lent and idle capacity.

    Additional arguments (such as ``aws_conn_id``) may be specified and are
    passed down to the underlying AwsBaseHook.

    .. seealso::
        - :class:`airflow.providers.amazon.aws.hooks.base_aws.AwsBaseHook`
    """

    hook_name = "AWS Batch quota shares"

    def __init__(self, *args: Any, endpoint_url: str | None = None, **kwargs: Any) -> None:
        """:param endpoint_url: the Batch endpoint, overriding the connection's
        ``endpoint_url`` and the environment's ``AWS_ENDPOINT_URL``."""
        kwargs["client_type"] = "batch"
        self.endpoint_url = endpoint_url
        super().__init__(*args, **kwargs)

    @cached_property
    def conn_config(self) -> AwsConnectionWrapper:
        config = super().conn_config
        if self.endpoint_url is not None:
            config.endpoint_url = self.endpoint_url
        return config

    # -- service jobs -------------------------------------------------------------

    def submit_service_job(self, **request: Any) -> dict[str, Any]:
        """``SubmitServiceJob``; ``request`` is its input (``jobName``, ``jobQueue``, ...)."""
        return self._call("submit_service_job", **request)

    def describe_service_job(self, job_id: str) -> dict[str, Any]:
        return self._call("describe_service_job", jobId=job_id)

    def list_service_jobs(
        self,
        job_queue: str,
        job_status: str | None = None,
        filters: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Every job summary ``ListServiceJobs`` answers, all pages."""
        params: dict[str, Any] = {"jobQueue": job_queue}
        if job_status is not None:
            params["jobStatus"] = job_status
        if filters:
            params["filters"] = filters
        return self._all_pages("ListServiceJobs", "jobSummaryList", **params)

    def update_service_job_priority(self, job_id: str, priority: int) -> dict[str, Any]:
        return self._call("update_service_job", jobId=job_id, schedulingPriority=priority)

    def terminate_service_job(self, job_id: str, reason: str) -> None:
        self._call("terminate_service_job", jobId=job_id, reason=reason)

    # -- queues, shares, environments, scheduling policies ---------------------------
    # create_* and update_* take the operation's own input (botocore's names) and
    # return its answer; ``airflow-quota apply`` plans these calls from a config file.

    def create_quota_share(self, **request: Any) -> dict[str, Any]:
        return self._call("create_quota_share", **request)

    def update_quota_share(self, **request: Any) -> dict[str, Any]:
        return self._call("update_quota_share", **request)

    def create_service_environment(self, **request: Any) -> dict[str, Any]:
        return self._call("create_service_environment", **request)

    def update_service_environment(self, **request: Any) -> dict[str, Any]:
        return self._call("update_service_environment", **request)

    def create_scheduling_policy(self, **request: Any) -> dict[str, Any]:
        return self._call("create_scheduling_policy", **request)

    def update_scheduling_policy(self, **request: Any) -> dict[str, Any]:
        return self._call("update_scheduling_policy", **request)

    def create_job_queue(self, **request: Any) -> dict[str, Any]:
        return self._call("create_job_queue", **request)

    def update_job_queue(self, **request: Any) -> dict[str, Any]:
        return self._call("update_job_queue", **request)

    def list_job_queues(self) -> list[dict[str, Any]]:
        """Every job queue of the account and region (``DescribeJobQueues``, all pages)."""
        return self._all_pages("DescribeJobQueues", "jobQueues")

    def list_scheduling_policies(self) -> list[dict[str, Any]]:
        """The ARN of every scheduling policy (``ListSchedulingPolicies``, all pages)."""
        return self._all_pages("ListSchedulingPolicies", "schedulingPolicies")

    def describe_scheduling_policies(self, *arns: str) -> list[dict[str, Any]]:
        answer = self._call("describe_scheduling_policies", arns=list(arns))
        policies: list[dict[str, Any]] = answer["schedulingPolicies"]
        return policies

    def describe_quota_share(self, quota_share_arn: str) -> dict[str, Any]:
        return self._call("describe_quota_share", quotaShareArn=quota_share_arn)

    def list_quota_shares(self, job_queue: str) -> list[dict[str, Any]]:
        return self._all_pages("ListQuotaShares", "quotaShares", jobQueue=job_queue)

    def describe_job_queue(self, job_queue: str) -> dict[str, Any]:
        """The job queue named ``job_queue`` (name or ARN); ``ValueError`` if there is none."""
        queues = self._all_pages("DescribeJobQueues", "jobQueues", jobQueues=[job_queue])
        if not queues:
            raise ValueError(f"job queue {job_queue} does not exist")
        return queues[0]

    def describe_service_environments(self, *environments: str) -> list[dict[str, Any]]:
        """The named service environments (names or ARNs); all of them when none is named."""
        params = {"serviceEnvironments": list(environments)} if environments else {}
        return self._all_pages("DescribeServiceEnvironments", "serviceEnvironments", **params)

    def get_job_queue_snapshot(self, job_queue: str) -> dict[str, Any]:
        return self._call("get_job_queue_snapshot", jobQueue=job_queue)

    # -- quota views --------------------------------------------------------------

    def queue_config(self, job_queue: str) -> QueueConfig:
        """The queue's shares (``ListQuotaShares``) and its service environments' capacity."""
        queue = self.describe_job_queue(job_queue)
        environments = self._environments_of(queue)
        shares = self.list_quota_shares(queue["jobQueueArn"])
        return queue_config_from_aws(queue["jobQueueName"], shares, environments)

    def queue_past(self, job_queue: str) -> QueuePast:
        """The queue's config today and what the tags ``airflow-quota apply`` left tell of
        its past (:func:`~airflow_quota_provider.aws_batch.change_tags.queue_past`):
        ``queue_config``'s calls, then one ``DescribeQuotaShare`` per share for its tags."""
        queue = self.describe_job_queue(job_queue)
        environments = self._environments_of(queue)
        shares = [
            self.describe_quota_share(share["quotaShareArn"])
            for share in self.list_quota_shares(queue["jobQueueArn"])
        ]
        today = queue_config_from_aws(queue["jobQueueName"], shares, environments)
        return queue_past(today, queue, environments, shares)

    def _environments_of(self, queue: Mapping[str, Any]) -> list[dict[str, Any]]:
        order = sorted(queue.get("serviceEnvironmentOrder") or (), key=lambda e: e["order"])
        names = [entry["serviceEnvironment"] for entry in order]
        return self.describe_service_environments(*names) if names else []

    def holding_jobs(self, job_queue: str) -> list[dict[str, Any]]:
        """Summaries of the queue's jobs that hold capacity (SCHEDULED, STARTING, RUNNING)."""
        jobs: list[dict[str, Any]] = []
        for status in HOLDING_STATUSES:
            jobs.extend(self.list_service_jobs(job_queue, status))
        return jobs

    def service_jobs_since(self, job_queue: str, since: int) -> list[dict[str, Any]]:
        """Every job of the queue AWS still lists that has not ended or ended after ``since``
        (epoch ms), described (``DescribeServiceJob``: its attempts), for
        :func:`~airflow_quota_provider.aws_batch.history.rebuild`. One ``ListServiceJobs``
        per status (all pages), then one ``DescribeServiceJob`` per job kept."""
        listed: dict[str, dict[str, Any]] = {}
        for status in (*ACTIVE_STATUSES, *TERMINAL_STATUSES):
            for job in self.list_service_jobs(job_queue, status):
                listed[job["jobId"]] = job
        return [
            self.describe_service_job(job_id)
            for job_id, job in listed.items()
            if job.get("status") in ACTIVE_STATUSES or int(job.get("stoppedAt") or since) >= since
        ]

    def share_usage(self, job_queue: str) -> dict[str, dict[str, Occupancy]]:
        """Per share and instance type: owned, used, own use, borrowed, lent and idle instances."""
        config = self.queue_config(job_queue)
        return occupancy(config, usage_from_jobs(self.holding_jobs(job_queue)))

    def share_headroom(self, job_queue: str, quota_share: str) -> dict[str, int]:
        """Instances per type ``quota_share`` could start now (own idle plus borrowable)."""
        config = self.queue_config(job_queue)
        return headroom(config, usage_from_jobs(self.holding_jobs(job_queue)), quota_share)

    # -- SageMaker ------------------------------------------------------------------

    def training_failure_reason(self, training_job_arn: str) -> str | None:
        """SageMaker's ``FailureReason`` of a training job, ``None`` if it has none.

        A training job's ARN holds its name lowercased, so the name is looked
        up (``ListTrainingJobs`` ``NameContains``, which ignores case) when the
        lowercased name is not found as is.
        """
        sagemaker = sagemaker_client(self)
        name = training_job_arn.rsplit("/", 1)[-1]
        try:
            answer = sagemaker.describe_training_job(TrainingJobName=name)
        except sagemaker.exceptions.ClientError:
            summaries = sagemaker.list_training_jobs(NameContains=name)["TrainingJobSummaries"]
            match = [s for s in summaries if s["TrainingJobArn"] == training_job_arn]
            if not match:
                raise
            answer = sagemaker.describe_training_job(TrainingJobName=match[0]["TrainingJobName"])
        reason = answer.get("FailureReason")
        return str(reason) if reason else None

    # -- plumbing -------------------------------------------------------------------

    def _call(self, method: str, **params: Any) -> dict[str, Any]:
        answer: dict[str, Any] = getattr(self.conn, method)(**params)
        answer.pop("ResponseMetadata", None)
        return answer

    def _all_pages(self, operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
        return list(all_items(self.conn, operation, key, **params))
