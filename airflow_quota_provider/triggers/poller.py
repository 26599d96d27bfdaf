"""One poller per (job queue, region, connection) in a triggerer process, shared by its triggers.

Every interval the poller lists the queue's unfinished jobs once per status
(``ListServiceJobs``, all pages) and reads ``GetJobQueueSnapshot`` if a
followed job is RUNNABLE. It calls ``DescribeServiceJob`` for a followed job
only when its summary shows something the summary cannot tell in full: a new
attempt, a return to waiting (a preemption, or a capacity error), or its end
(it left the unfinished lists). Otherwise the job's last description gets
the summary's status and status reason, which is all that changes while a job
waits or starts (a waiting job's reason names its place in its share, so it
changes whenever the queue moves). Each follower then gets the latest
description. So N triggers on one queue cost about ``6 + pages + describes
of jobs that started, went back or ended`` calls per interval instead of N.

boto3 calls run in threads (``asyncio.to_thread``): the amazon provider's
async path needs aiobotocore, an optional extra not installed here, and a
handful of calls per interval per queue needs no more than a thread. The hook
comes ready from :func:`~airflow_quota_provider.hooks.connections.aws_hook`:
its connection read on the event loop, so those threads never ask Airflow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.aws_batch.statuses import ACTIVE_STATUSES, WAITING_STATUSES
from airflow_quota_provider.triggers.progress import Position, position_in

if TYPE_CHECKING:
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

log = logging.getLogger(__name__)

PollerKey = tuple[str, str | None, str | None]
"""(job queue, region, AWS connection id)."""


@dataclass(frozen=True)
class Update:
    """The latest about one followed job: its description, or why it could not be read."""

    job: Mapping[str, Any] | None
    position: Position | None = None
    now_millis: int | None = None
    error: str | None = None


Subscriber = asyncio.Queue[Update]
HookMaker = Callable[[], Awaitable["BatchQuotaHook"]]
"""Gives the poller its hook, ready (e.g. ``QuotaBaseTrigger.batch_hook``)."""


class QueuePoller:
    """Polls one job queue for every trigger following a job on it."""

    def __init__(self, key: PollerKey, make_hook: HookMaker) -> None:
        self.key = key
        self.loop = asyncio.get_running_loop()
        self._make_hook = make_hook
        self._hook: BatchQuotaHook | None = None
        self._followers: dict[str, dict[Subscriber, float]] = {}
        self._seen: dict[str, tuple[Any, ...]] = {}
        self._described: dict[str, Mapping[str, Any]] = {}
        self._wake = asyncio.Event()
        self.rounds = 0
        """Polling rounds done so far, failed ones included."""
        self.failed_in_a_row = 0
        self._task = self.loop.create_task(self._run(), name=f"quota-poller-{key[0]}")

    @property
    def followed(self) -> int:
        return sum(len(s) for s in self._followers.values())

    def follow(self, job_id: str, interval: float) -> Subscriber:
        queue: Subscriber = asyncio.Queue(maxsize=1)
        self._followers.setdefault(job_id, {})[queue] = interval
        self._seen.pop(job_id, None)  # a new follower gets a fresh description
        self._wake.set()
        return queue

    def unfollow(self, job_id: str, queue: Subscriber) -> None:
        followers = self._followers.get(job_id, {})
        followers.pop(queue, None)
        if not followers:
            self._followers.pop(job_id, None)
            self._seen.pop(job_id, None)
            self._described.pop(job_id, None)
        if not self._followers:
            self._task.cancel()
            if _POLLERS.get(self.key) is self:
                del _POLLERS[self.key]

    def refresh(self, job_id: str) -> None:
        """Describe ``job_id`` again next round (after changing it ourselves)."""
        self._seen.pop(job_id, None)

    async def _run(self) -> None:
        while self._followers:
            self._wake.clear()
            try:
                await self.poll_once()
                self.failed_in_a_row = 0
            except Exception as error:  # one bad round must not stop every follower
                self._failed(error)
            self.rounds += 1
            interval = min(i for f in self._followers.values() for i in f.values())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=interval)

    def _failed(self, error: Exception) -> None:
        """Tell every follower the round failed; each decides when to give up."""
        self.failed_in_a_row += 1
        message = (
            f"polling job queue {self.key[0]} failed "
            f"({self.failed_in_a_row} round(s) in a row): {error}"
        )
        log.warning("%s", message)
        for followers in list(self._followers.values()):
            for queue in list(followers):
                _offer(queue, Update(None, error=message))

    async def poll_once(self) -> None:
        hook = await self._get_hook()
        job_queue = self.key[0]
        summaries: dict[str, Mapping[str, Any]] = {}
        for status in ACTIVE_STATUSES:
            jobs = await asyncio.to_thread(hook.list_service_jobs, job_queue, status)
            summaries.update((job["jobId"], job) for job in jobs)
        followed = list(self._followers)
        snapshot: Mapping[str, Any] = {}
        if any((summaries.get(j) or {}).get("status") == "RUNNABLE" for j in followed):
            snapshot = await asyncio.to_thread(hook.get_job_queue_snapshot, job_queue)
        now = (snapshot.get("frontOfQueue") or {}).get("lastUpdatedAt")
        for job_id in followed:
            update = await self._update(hook, job_id, summaries.get(job_id), snapshot, now)
            for queue in list(self._followers.get(job_id, {})):
                _offer(queue, update)

    async def _update(
        self,
        hook: BatchQuotaHook,
        job_id: str,
        summary: Mapping[str, Any] | None,
        snapshot: Mapping[str, Any],
        now: int | None,
    ) -> Update:
        mark = _fingerprint(summary)
        if self._seen.get(job_id) != mark or job_id not in self._described:
            try:
                self._described[job_id] = await asyncio.to_thread(hook.describe_service_job, job_id)
            except Exception as error:
                return Update(None, error=f"DescribeServiceJob {job_id} failed: {error}")
            self._seen[job_id] = mark
        job = self._described[job_id]
        if summary is not None:
            job = {**job, **{k: summary[k] for k in _FROM_SUMMARY if k in summary}}
        position = None
        if job.get("status") == "RUNNABLE" and snapshot:
            position = position_in(snapshot, job.get("jobArn") or "", job.get("quotaShareName"))
        return Update(job, position, now)

    async def _get_hook(self) -> BatchQuotaHook:
        if self._hook is None:
            self._hook = await self._make_hook()
        return self._hook


_FROM_SUMMARY = ("status", "statusReason", "startedAt")
"""What a summary tells as well as a description, and fresher than the last one."""


def _fingerprint(summary: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What must change for a job to be described again (see the module docstring)."""
    if summary is None:
        return ("ended",)
    latest = ((summary.get("latestAttempt") or {}).get("serviceResourceId") or {}).get("value")
    return (latest, summary.get("status") in WAITING_STATUSES)


def _offer(queue: Subscriber, update: Update) -> None:
    """Hand over the latest update; a follower that has not read the last one gets this instead."""
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(update)


_POLLERS: dict[PollerKey, QueuePoller] = {}


def poller_for(key: PollerKey, make_hook: HookMaker) -> QueuePoller:
    """This process's poller for ``key``, started on the running loop if there is none yet."""
    poller = _POLLERS.get(key)
    if poller is None or poller.loop is not asyncio.get_running_loop() or poller.loop.is_closed():
        poller = QueuePoller(key, make_hook)
        _POLLERS[key] = poller
    return poller
