"""Run SageMaker training directly from a task in a pools fleet, preemptible."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.providers.common.compat.sdk import conf

from airflow_quota_provider.aws_batch.training_config import instances_of, validate_training_config
from airflow_quota_provider.checkpoints import checkpoint_uri
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.exceptions import (
    InvalidTrainingConfig,
    TrainingJobError,
    TrainingJobFailed,
    TrainingJobTimeout,
    TrainingJobUnreadable,
)
from airflow_quota_provider.hooks.sagemaker import RUNNING_STATUSES, TrainingTries
from airflow_quota_provider.links.batch_quota import TrainingJobLink
from airflow_quota_provider.operators.worker_wait import checked_poll_failures
from airflow_quota_provider.refusals import failing_at_once
from airflow_quota_provider.triggers.events import TrainingJobEvent
from airflow_quota_provider.triggers.sagemaker import (
    Follow,
    TrainingJobTrigger,
    event_of,
    observe,
    stop_try,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

TRY_TAG = "airflow:try_number"


class PoolTrainingOperator(AwsBaseOperator[SageMakerHook]):
    """Run one SageMaker training job per try, in a pool the pool manager runs; preemptible.

    The pool manager admits the task through its pool (``pool``, ``pool_slots``,
    ``priority_weight``). Each try creates its own training job, named after the
    task instance and the try
    (:meth:`~airflow_quota_provider.aws_batch.submission.TaskKey.training_job_name`) and
    tagged ``airflow:*``, so a worker that comes back reattaches to its try's job
    instead of creating a second one. Before a try creates its job, any earlier try's
    job still running is stopped. When the manager preempts the task (clears it), the
    operator's ``on_kill`` (or, deferred, its trigger's) stops the job and waits for it
    to stop; the log says who preempted it and why, and the next try resumes from the
    job's ``CheckpointConfig`` (the same S3 location every try).

    Returns (XCom) a dict with ``training_job_name``, ``training_job_arn``, ``status``,
    ``attempts`` (training jobs of all tries), ``preemptions`` (earlier tries' jobs that
    were stopped), ``training_job_arns``, ``queued_seconds`` (creation to training start,
    summed) and ``run_seconds`` (training time, summed).

    :param training_config: a SageMaker ``CreateTrainingJob`` request without
        ``TrainingJobName`` (the operator names each try's job), checked against
        botocore's input shape before anything is created. (templated)
    :param tags: more tags of the training job. (templated)
    :param deferrable: wait in the triggerer; default ``[operators] default_deferrable``.
    :param poll_interval: seconds between status checks.
    :param max_wait_seconds: stop waiting (``TrainingJobTimeout``) after this long, leaving
        the job running for a retry to reattach to; ``None`` waits as long as it lasts.
    :param stop_on_kill: stop the training job when the task is killed, cleared
        (preempted) or marked failed/succeeded. Without it the task is not preemptible:
        mark it so (``executor_config={"quota": {"preemptible": False}}``).
    :param stop_wait_seconds: how long a killed try waits for its job to stop.
    :param max_poll_failures: fail (``TrainingJobUnreadable``) once the job's status could
        not be read this many polls in a row; ``None`` keeps trying.
    :param pool_slots: units the task holds in its pool; default the request's instance
        count (a fleet counted in instances). Must be a whole multiple of it (units per
        instance, e.g. 8 for GPUs of an 8-GPU instance).
    :param aws_conn_id: the Airflow connection used for AWS credentials.
        If ``None`` or empty, boto3's default credential chain is used.
    :param region_name: AWS region name; default boto3's.
    :param verify: whether or not to verify SSL certificates.
    :param botocore_config: configuration dictionary for the botocore client.
    """

    aws_hook_class = SageMakerHook
    template_fields: Sequence[str] = aws_template_fields("training_config", "tags")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        "training_config": "json",
        "tags": "json",
    }
    operator_extra_links = (TrainingJobLink(),)
    ui_color = "#ff9900"

    def __init__(
        self,
        *,
        training_config: dict[str, Any],
        tags: dict[str, str] | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float = conf.getfloat("quota_provider", "poll_interval", fallback=30.0),
        max_wait_seconds: float | None = None,
        stop_on_kill: bool = True,
        stop_wait_seconds: float = 300.0,
        max_poll_failures: int | None = conf.getint(
            "quota_provider", "max_poll_failures", fallback=10
        ),
        **kwargs: Any,
    ) -> None:
        if "pool_slots" not in kwargs and isinstance(training_config, Mapping):
            instances = instances_of(training_config)
            if isinstance(instances, dict):
                kwargs["pool_slots"] = sum(instances.values())
        super().__init__(**kwargs)
        self.training_config = training_config
        self.tags = tags
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.max_wait_seconds = max_wait_seconds
        self.stop_on_kill = stop_on_kill
        if stop_wait_seconds < 0:
            raise ValueError(f"stop_wait_seconds must be >= 0, got {stop_wait_seconds!r}")
        self.stop_wait_seconds = stop_wait_seconds
        self.max_poll_failures = checked_poll_failures(max_poll_failures)
        self.training_job_name: str | None = None
        self.killed = False

    # -- the try ------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        identity, try_number = _identity(context)
        name = identity.training_job_name(try_number)
        with failing_at_once():
            request = self._request(identity, try_number, name)
        tries = TrainingTries(self.hook.conn)
        self.training_job_name = name
        job = tries.job(name)
        if job is None:
            self._clear_the_way(tries, identity, try_number, request)
            # Airflow annotates conn as ``boto3.client``, a function (not a type) in boto3-stubs
            cast(Any, self.hook.conn).create_training_job(**request)
            self.log.info(
                "try %d created training job %s (%s) for %d slots of pool %s",
                try_number,
                name,
                _instances_text(request),
                self.pool_slots,
                self.pool,
            )
            job = tries.job(name)
            assert job is not None, f"training job {name} was created but cannot be found"
        else:
            self.log.info(
                "try %d reattaches to its training job %s (%s)",
                try_number,
                name,
                job["TrainingJobStatus"],
            )
        TrainingJobLink.persist(
            context,
            self,
            self.hook.conn_region_name,
            self.hook.conn_partition,
            training_job_name=name,
        )
        lines, event = observe(job, 0)
        for line in lines:
            self.log.info("%s", line)
        if event is None and self.deferrable:
            self.defer(trigger=self._trigger(name, len(lines)), method_name="execute_complete")
        if event is None:
            event = self._wait_in_worker(tries, name, len(lines))
        return self._finish(tries, identity, try_number, event)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        identity, try_number = _identity(context)
        self.training_job_name = identity.training_job_name(try_number)
        tries = TrainingTries(self.hook.conn)
        return self._finish(tries, identity, try_number, TrainingJobEvent(**event))  # type: ignore[typeddict-item]

    def on_kill(self) -> None:
        """Stop this try's training job when the worker is told to stop (a preemption
        clears the task; ``deferrable=False``)."""
        if not self.training_job_name:
            return
        self.killed = True
        if not self.stop_on_kill:
            self.log.info(
                "stop_on_kill is False: leaving training job %s running", self.training_job_name
            )
            return
        stop_try(
            TrainingTries(self.hook.conn), self.training_job_name, self.stop_wait_seconds, self.log
        )

    # -- steps ----------------------------------------------------------------------

    def _request(self, identity: TaskKey, try_number: int, name: str) -> dict[str, Any]:
        config = self.training_config
        if not isinstance(config, Mapping):
            validate_training_config(config)  # says what it expected
        if "TrainingJobName" in config:
            raise InvalidTrainingConfig(
                [
                    f"TrainingJobName: leave it out; the operator names each try's job "
                    f"(this try's: {name})"
                ]
            )
        validate_training_config({**config, "TrainingJobName": name})
        instances = sum(instances_of(config).values())  # type: ignore[union-attr]
        if self.pool_slots % instances:
            raise InvalidTrainingConfig(
                [
                    f"ResourceConfig: {instances} instances, but pool_slots is "
                    f"{self.pool_slots}: pool_slots must be the instances times the units "
                    f"each holds ({instances}, {2 * instances}, ...)"
                ]
            )
        tags = {
            **{t["Key"]: t.get("Value", "") for t in config.get("Tags") or ()},
            **(self.tags or {}),
            **identity.tags(),
            TRY_TAG: str(try_number),
        }
        return {
            **config,
            "TrainingJobName": name,
            "Tags": [{"Key": key, "Value": value} for key, value in tags.items()],
        }

    def _clear_the_way(
        self,
        tries: TrainingTries,
        identity: TaskKey,
        try_number: int,
        request: Mapping[str, Any],
    ) -> None:
        """Stop earlier tries' jobs still running (a worker that died never stopped its own),
        and say what this try resumes from."""
        earlier = tries.earlier(identity, try_number)
        for summary in earlier:
            if summary["TrainingJobStatus"] in RUNNING_STATUSES:
                self.log.warning(
                    "an earlier try's training job %s is still %s: stopping it first",
                    summary["TrainingJobName"],
                    summary["TrainingJobStatus"],
                )
                stop_try(tries, summary["TrainingJobName"], self.stop_wait_seconds, self.log)
        if not earlier:
            return
        last = tries.job(earlier[-1]["TrainingJobName"]) or earlier[-1]
        why = tries.preemption(last) if "TrainingJobArn" in last else None
        uri = checkpoint_uri(request)
        self.log.info(
            "try %d follows %d earlier training jobs; the last, %s, ended %s after %s s of "
            "training%s",
            try_number,
            len(earlier),
            last["TrainingJobName"],
            last["TrainingJobStatus"],
            last.get("TrainingTimeInSeconds") or 0,
            f" (preempted: {why})" if why else "",
        )
        if uri:
            self.log.info("try %d resumes from the checkpoint at %s", try_number, uri)
        else:
            self.log.warning(
                "try %d starts over: training_config has no CheckpointConfig", try_number
            )

    def _trigger(self, name: str, seen: int) -> TrainingJobTrigger:
        return TrainingJobTrigger(
            training_job_name=name,
            poll_interval=self.poll_interval,
            transitions_seen=seen,
            max_wait_seconds=self.max_wait_seconds,
            stop_on_kill=self.stop_on_kill,
            stop_wait_seconds=self.stop_wait_seconds,
            max_poll_failures=self.max_poll_failures,
            aws_conn_id=self.aws_conn_id,
            region_name=self.region_name,
            verify=self.verify,
            botocore_config=self.botocore_config,
        )

    def _wait_in_worker(self, tries: TrainingTries, name: str, seen: int) -> TrainingJobEvent:
        follow = Follow(name, seen, self.max_poll_failures)
        deadline = time.monotonic() + (self.max_wait_seconds or 0)
        while True:
            time.sleep(self.poll_interval)
            if self.killed:  # on_kill ran in this process: the try ends here
                return event_of(
                    follow.last,
                    "failed",
                    f"this try was killed (preempted, cleared or marked in Airflow); its "
                    f"training job {name} was {'stopped' if self.stop_on_kill else 'left running'}",
                    follow.seen,
                )
            event = follow.poll(tries, self.log)
            if event is not None:
                return event
            if self.max_wait_seconds is not None and time.monotonic() >= deadline:
                return follow.timed_out(self.max_wait_seconds)

    def _finish(
        self, tries: TrainingTries, identity: TaskKey, try_number: int, event: TrainingJobEvent
    ) -> dict[str, Any]:
        name = event["training_job_name"]
        if event["status"] != "success":
            raise self._error(event)
        result = {
            "training_job_name": name,
            "status": event["training_job_status"],
            **tries.summary(identity, try_number),
        }
        result["training_job_arn"] = result["training_job_arns"][-1]
        self.log.info("training job %s Completed: %s", name, result)
        return result

    def _error(self, event: TrainingJobEvent) -> TrainingJobError:
        name, reason, message = (
            event["training_job_name"],
            event["failure_reason"],
            event["message"],
        )
        if event["status"] == "timeout":
            return TrainingJobTimeout(message, name, reason)
        if event["status"] == "error":
            return TrainingJobUnreadable(message, name, reason)
        return TrainingJobFailed(message, name, reason)


def _identity(context: Context) -> tuple[TaskKey, int]:
    ti = context["ti"]
    index = ti.map_index if ti.map_index is not None else -1
    return TaskKey(ti.dag_id, ti.run_id, ti.task_id, index), int(ti.try_number)


def _instances_text(request: Mapping[str, Any]) -> str:
    found = instances_of(request)
    if isinstance(found, str):
        return found
    return ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
