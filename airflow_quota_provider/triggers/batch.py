"""Follow one service job from the triggerer until it ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import TriggerEvent

from airflow_quota_provider.triggers.base import QuotaBaseTrigger
from airflow_quota_provider.triggers.events import ServiceJobEvent
from airflow_quota_provider.triggers.poller import QueuePoller, Update, poller_for
from airflow_quota_provider.triggers.progress import (
    JobWatch,
    escalation_due,
    outcome_of,
    timed_out,
)

KILL_REASON = "Airflow task was marked failed, succeeded or cleared by a user"


class ServiceJobTrigger(QuotaBaseTrigger):
    """Fire one :class:`~airflow_quota_provider.triggers.events.ServiceJobEvent` when a job ends.

    Triggers on the same job queue, region and connection in one triggerer
    share one :class:`~airflow_quota_provider.triggers.poller.QueuePoller`.

    :param job_id: the service job to follow.
    :param job_queue: its job queue (name or ARN); the poller lists this queue.
    :param poll_interval: seconds between polls.
    :param stop_on_preemption: fire ``preempted`` at the first preemption
        instead of waiting while AWS requeues the job.
    :param preempted_before: preemptions the job had when the task took it on;
        only later ones count for ``stop_on_preemption``.
    :param max_wait_seconds: fire ``timeout`` after this long; ``None`` waits forever.
    :param escalate_priority: ``{"after_seconds": N, "priority": P}``: raise a
        job RUNNABLE for N seconds since submission to priority P.
    :param cancel_on_kill: terminate the job when a user kills the deferred task.
    :param max_poll_failures: fire ``error`` once the job's status could not be
        read this many polls in a row (each poll already retried by botocore);
        ``None`` keeps trying forever.
    :param aws_conn_id, region_name, verify, botocore_config: the AWS connection,
        as for :class:`~airflow_quota_provider.triggers.base.QuotaBaseTrigger`.
    """

    def __init__(
        self,
        *,
        job_id: str,
        job_queue: str,
        poll_interval: float = 30,
        stop_on_preemption: bool = False,
        preempted_before: int = 0,
        max_wait_seconds: float | None = None,
        escalate_priority: dict[str, Any] | None = None,
        cancel_on_kill: bool = True,
        max_poll_failures: int | None = 10,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            aws_conn_id=aws_conn_id,
            region_name=region_name,
            verify=verify,
            botocore_config=botocore_config,
        )
        self.job_id = job_id
        self.job_queue = job_queue
        self.poll_interval = poll_interval
        self.stop_on_preemption = stop_on_preemption
        self.preempted_before = preempted_before
        self.max_wait_seconds = max_wait_seconds
        self.escalate_priority = escalate_priority
        self.cancel_on_kill = cancel_on_kill
        self.max_poll_failures = max_poll_failures
        self.last_job: dict[str, Any] | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return self._serialized(
            job_id=self.job_id,
            job_queue=self.job_queue,
            poll_interval=self.poll_interval,
            stop_on_preemption=self.stop_on_preemption,
            preempted_before=self.preempted_before,
            max_wait_seconds=self.max_wait_seconds,
            escalate_priority=self.escalate_priority,
            cancel_on_kill=self.cancel_on_kill,
            max_poll_failures=self.max_poll_failures,
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        poller = poller_for((self.job_queue, self.region_name, self.aws_conn_id), self.batch_hook)
        updates = poller.follow(self.job_id, self.poll_interval)
        watch = JobWatch(self.job_id, self.stop_on_preemption, self.preempted_before)
        try:
            event = await asyncio.wait_for(
                self._follow(poller, updates, watch), timeout=self.max_wait_seconds
            )
        except TimeoutError:
            assert self.max_wait_seconds is not None  # no limit, no timeout
            event = timed_out(self._last_seen(), self.max_wait_seconds)
        finally:
            poller.unfollow(self.job_id, updates)
        yield TriggerEvent(dict(event))  # type: ignore[no-untyped-call]

    async def _follow(
        self, poller: QueuePoller, updates: asyncio.Queue[Update], watch: JobWatch
    ) -> ServiceJobEvent:
        failures = 0
        while True:
            update = await updates.get()
            if update.job is None:
                failures += 1
                self.log.warning("%s", update.error)
                if self.max_poll_failures is not None and failures >= self.max_poll_failures:
                    return self._gave_up(failures, update.error)
                continue
            failures = 0
            self.last_job = dict(update.job)
            lines, event = watch.observe(update.job, update.position)
            for line in lines:
                self.log.info("%s", line)
            if event is not None:
                return event
            await self._escalate(poller, update)

    async def _escalate(self, poller: QueuePoller, update: Update) -> None:
        assert update.job is not None
        priority = escalation_due(update.job, self.escalate_priority, update.now_millis)
        if priority is None:
            return
        self.log.info(
            "service job %s RUNNABLE for %s s or more: raising its priority from %s to %s",
            self.job_id,
            (self.escalate_priority or {}).get("after_seconds"),
            update.job.get("schedulingPriority"),
            priority,
        )
        hook = await self.batch_hook()
        await asyncio.to_thread(hook.update_service_job_priority, self.job_id, priority)
        poller.refresh(self.job_id)

    def _last_seen(self) -> dict[str, Any]:
        return self.last_job or {"jobId": self.job_id, "status": "UNKNOWN"}

    def _gave_up(self, failures: int, error: str | None) -> ServiceJobEvent:
        job = self._last_seen()
        message = (
            f"gave up following service job {self.job_id} (last seen "
            f"{job['status']}): its status could not be read {failures} polls in a row "
            f"(max_poll_failures); the job may still be running and a retry of the task "
            f"reattaches to it; last error: {error}"
        )
        return outcome_of(job, "error", message)

    async def on_kill(self) -> None:
        """Terminate the service job when a user marks the task failed/succeeded or clears it.

        Airflow 3.3 calls this only on such a user action, not when the
        triggerer stops or hands the trigger to another triggerer.
        """
        if not self.cancel_on_kill:
            self.log.info("cancel_on_kill is False: leaving service job %s running", self.job_id)
            return
        self.log.info("terminating service job %s: %s", self.job_id, KILL_REASON)
        hook = await self.batch_hook()
        await asyncio.to_thread(hook.terminate_service_job, self.job_id, KILL_REASON)
