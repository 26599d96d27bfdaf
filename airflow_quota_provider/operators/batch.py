"""Run one SageMaker training job through an AWS Batch quota share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.providers.common.compat.sdk import conf

from airflow_quota_provider import metrics
from airflow_quota_provider.aws_batch.statuses import TERMINAL_STATUSES
from airflow_quota_provider.aws_batch.submission import build_request, check_admission
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.exceptions import (
    PollingFailed,
    PreemptionRetriesExhausted,
    ServiceJobFailed,
    ServiceJobPreempted,
    ServiceJobTimeout,
)
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.links.batch_quota import ServiceJobLink, TrainingJobLink
from airflow_quota_provider.operators.worker_wait import checked_poll_failures, wait_in_worker
from airflow_quota_provider.refusals import failing_at_once
from airflow_quota_provider.triggers.batch import ServiceJobTrigger
from airflow_quota_provider.triggers.events import ServiceJobEvent
from airflow_quota_provider.triggers.progress import JobWatch, outcome_of, preemptions_of

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

RETRIES_EXHAUSTED = "PREEMPTION_RETRIES_EXHAUSTED"
RESULT_KEYS = (
    "job_id",
    "job_arn",
    "job_name",
    "attempts",
    "preemptions",
    "training_job_arns",
    "queued_seconds",
    "run_seconds",
    "status_reason",
)


class QuotaTrainingOperator(AwsBaseOperator[BatchQuotaHook]):
    """Submit a SageMaker training job to an AWS Batch quota share and wait for it to end.

    The job is submitted with a ``clientToken`` derived from the task
    instance (dag, task, run, map index), so a retried task reattaches to the
    job it submitted before. A request that could never run (an invalid
    ``training_config`` or priority, a share that does not exist, more instances
    than the share could ever hold) fails the task before anything is submitted,
    without retries (:class:`~airflow_quota_provider.refusals.RequestRefused`).
    Returns (XCom) a dict with ``job_id``, ``job_arn``, ``status``, ``attempts``,
    ``preemptions``, ``training_job_arns``, ``queued_seconds`` and ``run_seconds``.

    :param job_queue: the Batch job queue (name or ARN). (templated)
    :param quota_share: the quota share to run in. (templated)
    :param training_config: a SageMaker ``CreateTrainingJob`` request, checked
        against botocore's input shape before submitting. (templated)
    :param priority: scheduling priority 0..9999, higher first. (templated)
    :param job_name: the service job's name; default ``<dag_id>-<task_id>``. (templated)
    :param preemption_retries: preemptions the job survives before AWS fails it;
        ``None`` requeues it forever.
    :param retry_attempts: Batch ``retryStrategy.attempts`` (1..10) for failed attempts.
    :param attempt_timeout: seconds an attempt may run before Batch stops it.
    :param tags: tags of the service job (the task's ids are added). (templated)
    :param wait_for_completion: wait for the job to end; if False return once submitted.
    :param deferrable: wait in the triggerer; default ``[operators] default_deferrable``.
    :param poll_interval: seconds between status checks.
    :param max_wait_seconds: stop waiting (``ServiceJobTimeout``) after this long;
        ``None`` waits as long as the job lasts.
    :param stop_on_preemption: fail the task (``ServiceJobPreempted``) at the first
        preemption, leaving AWS's requeued job for a task retry to reattach to.
    :param escalate_priority: starvation guard ``{"after_seconds": N, "priority": P}``:
        a job RUNNABLE N seconds after submission is raised to P.
    :param cancel_on_kill: terminate the job if the task is killed or, while
        deferred, marked failed/succeeded or cleared by a user.
    :param max_poll_failures: while deferred, fail (``PollingFailed``) once the
        job's status could not be read this many polls in a row; default
        ``[quota_provider] max_poll_failures``; ``None`` keeps trying.
    :param aws_conn_id: the Airflow connection used for AWS credentials.
        If ``None`` or empty, boto3's default credential chain is used.
    :param region_name: AWS region name; default boto3's.
    :param verify: whether or not to verify SSL certificates.
    :param botocore_config: configuration dictionary for the botocore client.
    """

    aws_hook_class = BatchQuotaHook
    template_fields: Sequence[str] = aws_template_fields(
        "job_queue", "quota_share", "training_config", "priority", "job_name", "tags"
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        "training_config": "json",
        "tags": "json",
    }
    operator_extra_links = (ServiceJobLink(), TrainingJobLink())
    ui_color = "#ff9900"

    def __init__(
        self,
        *,
        job_queue: str,
        quota_share: str,
        training_config: dict[str, Any],
        priority: int = 0,
        job_name: str | None = None,
        preemption_retries: int | None = None,
        retry_attempts: int | None = None,
        attempt_timeout: int | None = None,
        tags: dict[str, str] | None = None,
        wait_for_completion: bool = True,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float = conf.getfloat("quota_provider", "poll_interval", fallback=30.0),
        max_wait_seconds: float | None = None,
        stop_on_preemption: bool = False,
        escalate_priority: dict[str, Any] | None = None,
        cancel_on_kill: bool = True,
        max_poll_failures: int | None = conf.getint(
            "quota_provider", "max_poll_failures", fallback=10
        ),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_queue = job_queue
        self.quota_share = quota_share
        self.training_config = training_config
        self.priority = priority
        self.job_name = job_name
        self.preemption_retries = preemption_retries
        self.retry_attempts = retry_attempts
        self.attempt_timeout = attempt_timeout
        self.tags = tags
        self.wait_for_completion = wait_for_completion
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.max_wait_seconds = max_wait_seconds
        self.stop_on_preemption = stop_on_preemption
        self.escalate_priority = escalate_priority
        self.cancel_on_kill = cancel_on_kill
        self.max_poll_failures = checked_poll_failures(max_poll_failures)
        self.job_id: str | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        with failing_at_once():
            submitted = self._submit(context)
        self.job_id = job_id = submitted["jobId"]
        ServiceJobLink.persist(
            context, self, self.hook.conn_region_name, self.hook.conn_partition, job_id=job_id
        )
        job = self.hook.describe_service_job(job_id)
        if not self.wait_for_completion:
            return {**_pick(outcome_of(job, "success", "")), "status": job["status"]}
        if job["status"] in TERMINAL_STATUSES:
            self.log.info("service job %s had already ended %s", job_id, job["status"])
            return self._finish(context, outcome_of(job, _outcome(job), f"service job {job_id}"))
        # Preemptions before this try (a retry reattaching) do not stop it.
        watch = JobWatch(job_id, self.stop_on_preemption, preemptions_of(job))
        if self.deferrable:
            self.defer(trigger=self._trigger(watch), method_name="execute_complete")
        event = wait_in_worker(
            self.hook,
            watch,
            poll_interval=self.poll_interval,
            escalate_priority=self.escalate_priority,
            max_wait_seconds=self.max_wait_seconds,
            log=self.log,
        )
        return self._finish(context, event)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        return self._finish(context, ServiceJobEvent(**event))  # type: ignore[typeddict-item]

    def on_kill(self) -> None:
        """Terminate the job when the worker is told to stop (``deferrable=False``)."""
        if self.job_id and self.cancel_on_kill:
            self.log.info("terminating service job %s", self.job_id)
            self.hook.terminate_service_job(self.job_id, "Airflow task was killed")

    def _submit(self, context: Context) -> dict[str, Any]:
        ti = context["ti"]
        index = ti.map_index if ti.map_index is not None else -1
        identity = TaskKey(ti.dag_id, ti.run_id, ti.task_id, index)
        request = build_request(
            identity=identity,
            job_queue=self.job_queue,
            quota_share=self.quota_share,
            training_config=self.training_config,
            priority=self.priority,
            job_name=self.job_name,
            preemption_retries=self.preemption_retries,
            retry_attempts=self.retry_attempts,
            attempt_timeout=self.attempt_timeout,
            tags=self.tags,
        )
        config = self.hook.queue_config(self.job_queue)
        check_admission(
            config, self.quota_share, self.training_config, self.priority, request["jobName"]
        )
        answer = self.hook.submit_service_job(**request)
        metrics.count("submissions", self.job_queue, self.quota_share)
        self.log.info(
            "submitted service job %s (%s) to share %s of %s at priority %s; clientToken %s",
            answer["jobId"],
            answer["jobName"],
            self.quota_share,
            self.job_queue,
            self.priority,
            request["clientToken"],
        )
        return answer

    def _trigger(self, watch: JobWatch) -> ServiceJobTrigger:
        return ServiceJobTrigger(
            job_id=watch.job_id,
            job_queue=self.job_queue,
            poll_interval=self.poll_interval,
            stop_on_preemption=self.stop_on_preemption,
            preempted_before=watch.preempted_before,
            max_wait_seconds=self.max_wait_seconds,
            escalate_priority=self.escalate_priority,
            cancel_on_kill=self.cancel_on_kill,
            max_poll_failures=self.max_poll_failures,
            aws_conn_id=self.aws_conn_id,
            region_name=self.region_name,
            verify=self.verify,
            botocore_config=self.botocore_config,
        )

    def _finish(self, context: Context, event: ServiceJobEvent) -> dict[str, Any]:
        arns = event["training_job_arns"]
        if arns:
            TrainingJobLink.persist(
                context,
                self,
                self.hook.conn_region_name,
                self.hook.conn_partition,
                training_job_name=arns[-1].rsplit("/", 1)[-1],
            )
        result = {**_pick(event), "status": event["job_status"]}
        metrics.count("preemptions", self.job_queue, self.quota_share, by=event["preemptions"])
        if event["status"] == "failed":
            metrics.count("failures", self.job_queue, self.quota_share)
        if event["status"] == "success":
            self.log.info("service job %s SUCCEEDED: %s", event["job_id"], result)
            return result
        raise self._error(event)

    def _error(self, event: ServiceJobEvent) -> Exception:
        job_id, reason = event["job_id"], event["status_reason"]
        if event["status"] == "preempted":
            return ServiceJobPreempted(event["message"], job_id, reason)
        if event["status"] == "timeout":
            return ServiceJobTimeout(event["message"], job_id, reason)
        if event["status"] == "error":
            return PollingFailed(event["message"], job_id, reason)
        failure = self._failure_reason(event)
        message = f"{event['message']}; SageMaker FailureReason: {failure or 'none'}"
        if reason and reason.startswith(RETRIES_EXHAUSTED):
            return PreemptionRetriesExhausted(message, job_id, reason, failure)
        return ServiceJobFailed(message, job_id, reason, failure)

    def _failure_reason(self, event: ServiceJobEvent) -> str | None:
        if not event["training_job_arns"]:
            return None
        try:
            return self.hook.training_failure_reason(event["training_job_arns"][-1])
        except Exception as error:  # the job's own failure matters more than this lookup
            self.log.warning("could not read the training job's FailureReason: %s", error)
            return None


def _outcome(job: Mapping[str, Any]) -> Any:
    return "success" if job["status"] == "SUCCEEDED" else "failed"


def _pick(event: Mapping[str, Any]) -> dict[str, Any]:
    return {key: event[key] for key in RESULT_KEYS}
