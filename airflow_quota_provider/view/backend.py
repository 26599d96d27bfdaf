"""Where the GPU Quotas view and ``airflow-quota status`` get their data: one interface.

:class:`QuotaBackend` is what the view, its API and the CLI read through.
:class:`BatchBackend` answers from AWS Batch through
:class:`~airflow_quota_provider.hooks.batch.BatchQuotaHook`; a ledger backend
can answer the same questions later.

Cost. A queue is read at most once per ``ttl`` seconds (all readers share
the result; one lock makes concurrent readers wait for one read instead of
reading in parallel). One read makes, besides extra pages of long listings:
``DescribeJobQueues``, ``DescribeServiceEnvironments``, ``ListQuotaShares``,
``GetJobQueueSnapshot``, ``ListServiceJobs`` for RUNNABLE, SCHEDULED,
STARTING and RUNNING and once for the jobs created in the window, then one
``DescribeServiceJob`` per job holding capacity, per waiting job among the
snapshot's first 100, and per job of the window not described yet once it
has ended (ended jobs never change, so their answers are kept). Each read also
forecasts when each waiting job starts
(:func:`~airflow_quota_provider.aws_batch.queue_view.forecast_of`): no AWS call,
the durations come from the jobs read; its time is the forecast's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_quota_provider.aws_batch.clock import now_of
from airflow_quota_provider.aws_batch.errors import AwsCallFailed
from airflow_quota_provider.aws_batch.errors import aws_call as _aws
from airflow_quota_provider.aws_batch.events import preemption_events
from airflow_quota_provider.aws_batch.history import rebuild
from airflow_quota_provider.aws_batch.queue_view import AwsReading, build, dispatch_order, job_view
from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES, TERMINAL_STATUSES
from airflow_quota_provider.aws_batch.translate import queue_config_from_aws
from airflow_quota_provider.core.config_timeline import QueuePast, timeline
from airflow_quota_provider.core.history_chart import HistoryReading, Window, window
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.views import Explanation, QueueSummary, QueueView
from airflow_quota_provider.exceptions import AmbiguousJob, JobCandidate, UnknownJob, UnknownQueue
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.links.batch_quota import ServiceJobLink
from airflow_quota_provider.metrics import emit_gauges
from airflow_quota_provider.view.explain import explain

DEFAULT_TTL = 15.0
DEFAULT_HOURS = 6.0
DEFAULT_BUCKETS = 24
HISTORY_TTL = 60.0
"""Least seconds a rebuilt history is reused (one ``DescribeServiceJob`` per job of its range)."""
LISTED_STATUSES = ("RUNNABLE", *HOLDING_STATUSES)
REBUILT = (
    "rebuilt from what AWS keeps of the queue's service jobs: jobs AWS no longer lists "
    "(ended some days ago) are not counted"
)


class QuotaBackend(Protocol):
    """What the view and the CLI ask. Errors: :class:`~airflow_quota_provider.exceptions.ViewError`
    for what does not exist, :class:`~airflow_quota_provider.aws_batch.errors.AwsCallFailed` when
    reading AWS fails."""

    def queues(self) -> list[QueueSummary]:
        """The job queues there are (SageMaker training queues)."""
        ...

    def queue(self, name: str) -> QueueView:
        """One queue (name or ARN): capacity, shares, waiting and running jobs, preemptions."""
        ...

    def explain(self, job: str, job_queue: str | None = None) -> Explanation:
        """Why one job waits, what it holds, how it was preempted.

        :param job: the service job's id, its ARN, or its name when no other job of
            ``job_queue`` (default: of any queue) has it.
        """
        ...

    def usage_history(self, name: str, range_name: str) -> HistoryReading:
        """One queue's usage history over the last ``range_name`` (a key of
        :data:`~airflow_quota_provider.core.history_chart.RANGES`)."""
        ...


class BatchHistory:
    """:class:`~airflow_quota_provider.core.history_chart.HistorySource` of an AWS Batch
    job queue: rebuilt from its service jobs
    (:func:`~airflow_quota_provider.aws_batch.history.rebuild`), each moment figured with
    the config then in force as the tags of ``airflow-quota apply`` tell it
    (:func:`~airflow_quota_provider.core.config_timeline.timeline`; where they do not, the
    reading's notes say what stands for the past); "now" is AWS's clock (the queue
    snapshot's).

    :param job_queue: the queue's name or ARN; ``name`` how the reading names it.
    """

    def __init__(self, hook: BatchQuotaHook, job_queue: str, name: str | None = None) -> None:
        self.hook, self.job_queue, self.name = hook, job_queue, name or job_queue
        self.clock = "AWS's clock"
        self._past: QueuePast | None = None

    def past(self) -> QueuePast:
        """The queue's config today and its recorded past, read once (an unknown queue
        fails here): one ``DescribeQuotaShare`` per share besides the queue's reading."""
        if self._past is None:
            with _aws(
                "DescribeJobQueues, DescribeServiceEnvironments, ListQuotaShares, "
                "DescribeQuotaShare"
            ):
                self._past = self.hook.queue_past(self.job_queue)
        return self._past

    def config(self) -> QueueConfig:
        """The queue's quota shares and capacity today."""
        return self.past().today

    def now(self) -> int:
        self.past()  # an unknown queue is named as such, not as a snapshot refused
        with _aws("GetJobQueueSnapshot"):
            return now_of(self.hook.get_job_queue_snapshot(self.job_queue))

    def reading(self, window: Window) -> HistoryReading:
        """The history over ``window``: one ``ListServiceJobs`` per status, then one
        ``DescribeServiceJob`` per job that ran in the window."""
        past = self.past()
        configs = timeline(past, window.since, window.until)
        with _aws("ListServiceJobs, DescribeServiceJob"):
            jobs = self.hook.service_jobs_since(self.job_queue, window.since)
        return HistoryReading(
            queue=self.name,
            kind="job queue",
            config=past.today,
            history=rebuild(configs, jobs, window.since, window.until),
            window=window,
            names={str(job["jobId"]): str(job.get("jobName") or "") for job in jobs},
            reasons={
                (str(job["jobId"]), int(attempt["stoppedAt"])): str(attempt["statusReason"])
                for job in jobs
                for attempt in job.get("attempts") or ()
                if attempt.get("stoppedAt") and attempt.get("statusReason")
            },
            notes=(REBUILT, *configs.notes),
        )


@dataclass
class _Entry:
    expires: float
    view: QueueView
    jobs: dict[str, Mapping[str, Any]]
    config: QueueConfig


class BatchBackend:
    """:class:`QuotaBackend` on AWS Batch, each queue read at most once per ``ttl`` seconds.

    :param hook: the hook, or a callable making it on first use.
    :param ttl: seconds a reading is reused.
    :param hours: how far back preemptions and utilization go.
    :param buckets: utilization points over ``hours``.
    :param clock: monotonic seconds, for the cache.
    """

    def __init__(
        self,
        hook: BatchQuotaHook | Callable[[], BatchQuotaHook],
        *,
        ttl: float = DEFAULT_TTL,
        hours: float = DEFAULT_HOURS,
        buckets: int = DEFAULT_BUCKETS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make_hook = hook if callable(hook) and not isinstance(hook, BatchQuotaHook) else None
        self._hook = hook if isinstance(hook, BatchQuotaHook) else None
        self.ttl, self.hours, self.buckets, self._clock = ttl, hours, buckets, clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._names: dict[str, str] = {}
        self._ended: dict[str, Mapping[str, Any]] = {}
        self._queues: tuple[float, list[QueueSummary]] | None = None
        self._history_lock = threading.Lock()
        self._histories: dict[tuple[str, str], tuple[float, HistoryReading]] = {}

    @property
    def hook(self) -> BatchQuotaHook:
        if self._hook is None:
            assert self._make_hook is not None
            self._hook = self._make_hook()
        return self._hook

    def queues(self) -> list[QueueSummary]:
        with self._lock:
            if self._queues is None or self._queues[0] <= self._clock():
                self._queues = (self._clock() + self.ttl, self._known_queues())
            return list(self._queues[1])

    def queue(self, name: str) -> QueueView:
        return self._entry(name).view

    def explain(self, job: str, job_queue: str | None = None) -> Explanation:
        for entry in self._fresh_entries():
            found = entry.view.job(job)
            if found is not None:
                return explain(found, entry.view, self._events(entry.jobs[job]))
        # An ended job never changes: no second read.
        described = self._ended.get(job) or self._find(job, job_queue)
        job_id = described["jobId"]
        entry = self._entry(described["jobQueue"])
        found = entry.view.job(job_id) or job_view(
            described, entry.view.now, {}, False, {}, self._console_url
        )
        return explain(found, entry.view, self._events(described))

    def usage_history(self, name: str, range_name: str) -> HistoryReading:
        """Rebuilt from the queue's service jobs with the config in force at each moment
        (:class:`BatchHistory`), kept per range for the longer of ``ttl`` and
        :data:`HISTORY_TTL` seconds: the queue's config and its shares' tags (one
        ``DescribeQuotaShare`` each), one ``ListServiceJobs`` per status, then one
        ``DescribeServiceJob`` per job that ran in the range."""
        entry = self._entry(name)
        key = (entry.view.name, range_name)
        with self._history_lock:
            kept = self._histories.get(key)
            if kept is not None and kept[0] > self._clock():
                return kept[1]
            win = window(range_name, entry.view.now)
            history = BatchHistory(self.hook, entry.view.arn, entry.view.name)
            reading = history.reading(win)
            self._histories[key] = (self._clock() + max(self.ttl, HISTORY_TTL), reading)
            return reading

    def _find(self, reference: str, job_queue: str | None) -> Mapping[str, Any]:
        """The described job ``reference`` names: its id or ARN, else its name."""
        try:
            return self._read_job(reference)
        except AwsCallFailed as error:
            if error.code != "ClientException":
                raise
            if reference.startswith("arn:"):
                raise UnknownJob(reference) from error
        return self._describe_named(reference, job_queue)

    def _describe_named(self, name: str, job_queue: str | None) -> Mapping[str, Any]:
        """The one job named ``name`` in ``job_queue`` (default: every queue)."""
        known = self.queues()
        if job_queue is None:
            queues = [q.name for q in known]
        elif any(job_queue in (q.name, q.arn) for q in known):
            queues = [job_queue]
        else:
            raise UnknownQueue(job_queue, [q.name for q in known])
        named: list[JobCandidate] = []
        for queue in queues:
            by_name = [{"name": "JOB_NAME", "values": [name]}]
            with _aws("ListServiceJobs"):
                listed = self.hook.list_service_jobs(queue, filters=by_name)
            named += [
                JobCandidate(j["jobId"], str(j.get("status") or ""), queue)
                for j in listed
                if j.get("jobName") == name
            ]
        if not named:
            raise UnknownJob(name, queues)
        if len(named) > 1:
            raise AmbiguousJob(name, named)
        return self._read_job(named[0].job_id)

    def _read_job(self, reference: str) -> Mapping[str, Any]:
        """``DescribeServiceJob`` outside the lock, so not kept with the queue's readings."""
        with _aws("DescribeServiceJob"):
            return self.hook.describe_service_job(reference)

    # -- reading ------------------------------------------------------------------------

    def _fresh_entries(self) -> list[_Entry]:
        now = self._clock()
        with self._lock:
            return [e for e in self._entries.values() if e.expires > now]

    def _entry(self, name: str) -> _Entry:
        with self._lock:
            key = self._names.get(name, name)
            entry = self._entries.get(key)
            if entry is None or entry.expires <= self._clock():
                entry = self._read(name)
                self._entries[entry.view.name] = entry
                self._names[entry.view.arn] = self._names[name] = entry.view.name
            return entry

    def _read(self, name: str) -> _Entry:
        hook = self.hook
        with _aws("DescribeJobQueues"):
            try:
                queue = hook.describe_job_queue(name)
            except ValueError:
                queue = None
        if queue is None:
            raise UnknownQueue(name, [q.name for q in self._known_queues()])
        arn = queue["jobQueueArn"]
        order = sorted(queue.get("serviceEnvironmentOrder") or (), key=lambda e: e["order"])
        names = [entry["serviceEnvironment"] for entry in order]
        with _aws("DescribeServiceEnvironments"):
            environments = hook.describe_service_environments(*names) if names else []
        with _aws("ListQuotaShares"):
            shares = hook.list_quota_shares(arn)
        with _aws("GetJobQueueSnapshot"):
            snapshot = hook.get_job_queue_snapshot(arn)
        now = now_of(snapshot)
        jobs = self._jobs(arn, snapshot, now)
        reading = AwsReading(
            queue=queue,
            config=queue_config_from_aws(queue["jobQueueName"], shares, environments),
            snapshot=snapshot,
            jobs=jobs,
            now=now,
            hours=self.hours,
            buckets=self.buckets,
        )
        view = build(reading, self._console_url)
        emit_gauges(view)
        return _Entry(self._clock() + self.ttl, view, jobs, reading.config)

    def _jobs(
        self, arn: str, snapshot: Mapping[str, Any], now: int
    ) -> dict[str, Mapping[str, Any]]:
        hook = self.hook
        listed: dict[str, Mapping[str, Any]] = {}
        with _aws("ListServiceJobs"):
            for status in LISTED_STATUSES:
                for job in hook.list_service_jobs(arn, status):
                    listed[job["jobId"]] = job
            since = str(now - int(self.hours * 3600 * 1000))
            for job in hook.list_service_jobs(
                arn, filters=[{"name": "AFTER_CREATED_AT", "values": [since]}]
            ):
                listed.setdefault(job["jobId"], job)
        front = set(dispatch_order(snapshot))
        jobs: dict[str, Mapping[str, Any]] = {}
        for job_id, summary in listed.items():
            state = summary.get("status")
            if job_id in self._ended:
                jobs[job_id] = self._ended[job_id]
            elif state in TERMINAL_STATUSES or state in HOLDING_STATUSES or job_id in front:
                jobs[job_id] = self._describe(job_id)
            else:
                jobs[job_id] = summary
        self._forget_ended(set(listed))
        return jobs

    def _describe(self, job_id: str) -> Mapping[str, Any]:
        with _aws("DescribeServiceJob"):
            job = self.hook.describe_service_job(job_id)
        if job.get("status") in TERMINAL_STATUSES:
            self._ended[job_id] = job
        return job

    def _forget_ended(self, listed: set[str]) -> None:
        """Keep only ended jobs still in some queue's window (per queue read, all queues)."""
        known = listed | {j for e in self._entries.values() for j in e.jobs}
        for job_id in [j for j in self._ended if j not in known]:
            del self._ended[job_id]

    def _known_queues(self) -> list[QueueSummary]:
        """The account's SageMaker training queues, read now (callers hold the lock or not)."""
        with _aws("DescribeJobQueues"):
            found = self.hook.list_job_queues()
        return [
            QueueSummary(q["jobQueueName"], q["jobQueueArn"], q.get("state", ""))
            for q in found
            if q.get("jobQueueType") == "SAGEMAKER_TRAINING"
        ]

    def _events(self, job: Mapping[str, Any]) -> list[Any]:
        return preemption_events(job, self._console_url)

    def _console_url(self, job_id: str) -> str:
        hook = self.hook
        domain = ServiceJobLink.get_aws_domain(hook.conn_partition) or "aws.amazon.com"
        return ServiceJobLink.format_str.format(
            aws_domain=domain, region_name=hook.conn_region_name, job_id=job_id
        )
