"""Tell, as it happens, who borrows, who waits and why, who is preempted and who resumes.

A :class:`Narrator` reads the job queue the way the provider's triggers do
(``ListServiceJobs`` per status, ``DescribeServiceJob`` for jobs that
changed) and words each change with the same
:class:`~airflow_quota_provider.triggers.progress.JobWatch` that writes the
task logs, naming jobs by name and stamping each line with the emulated
time since the story began. Borrowing comes from the core's occupancy view of
the jobs just listed, against the queue's config read once.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_quota_provider.aws_batch.statuses import ACTIVE_STATUSES, TERMINAL_STATUSES
from airflow_quota_provider.aws_batch.translate import usage_from_jobs
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.occupancy import Occupancy, occupancy
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.triggers.progress import JobWatch

Say = Callable[[str], None]
TRAINING_JOB_ARN = re.compile(r"arn:aws[-a-z]*:sagemaker:[^:]*:[0-9]*:training-job/")
"""Told by name: the ARN's prefix says nothing a reader needs."""
JOB_STATUSES = ACTIVE_STATUSES + TERMINAL_STATUSES


@dataclass
class Narrator:
    """Polls ``job_queue`` and says every change once.

    :param now_millis: the endpoint's clock, for the time stamps.
    """

    hook: BatchQuotaHook
    job_queue: str
    now_millis: Callable[[], int]
    say: Say = print
    started_millis: int | None = None
    jobs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    _watches: dict[str, JobWatch] = field(default_factory=dict)
    _seen: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    _borrowing: dict[str, str] = field(default_factory=dict)
    _config: QueueConfig | None = None

    def poll(self) -> None:
        """One look at the queue: say what changed since the last one."""
        now = self.now_millis()
        if self.started_millis is None:
            self.started_millis = now
        changed = False
        summaries: list[Mapping[str, Any]] = []
        for status in JOB_STATUSES:
            for summary in self.hook.list_service_jobs(self.job_queue, status):
                summaries.append(summary)
                changed |= self._look_at(summary, now)
        if changed:
            self._tell_borrowing(now, summaries)

    def _look_at(self, summary: Mapping[str, Any], now: int) -> bool:
        job_id = summary["jobId"]
        latest = (summary.get("latestAttempt") or {}).get("serviceResourceId") or {}
        mark = (summary.get("status"), summary.get("statusReason"), latest.get("value"))
        if self._seen.get(job_id) == mark:
            return False
        self._seen[job_id] = mark
        job = self.hook.describe_service_job(job_id)
        self.jobs[job_id] = job
        watch = self._watches.setdefault(job_id, JobWatch(job_id))
        lines, _ = watch.observe(job)
        name = str(job.get("jobName") or job_id)
        for line in lines:
            line = line.replace(f"service job {job_id}", name).replace(job_id, name)
            self._say(now, TRAINING_JOB_ARN.sub("", line))
        return True

    def _tell_borrowing(self, now: int, summaries: list[Mapping[str, Any]]) -> None:
        if self._config is None:  # the demo's shares do not change while it runs
            self._config = self.hook.queue_config(self.job_queue)
        usage = occupancy(self._config, usage_from_jobs(summaries))
        for share, units in sorted(usage.items()):
            words = _borrowing_words(share, units)
            if words != self._borrowing.get(share, ""):
                self._borrowing[share] = words
                if words:
                    self._say(now, words)

    def _say(self, now: int, line: str) -> None:
        elapsed = max(0, now - (self.started_millis or now)) // 1000
        self.say(f"[{elapsed // 3600:02d}:{elapsed % 3600 // 60:02d}] {line}")


def _borrowing_words(share: str, units: Mapping[str, Occupancy]) -> str:
    parts = [
        f"{o.borrowed} {unit} (uses {o.used}, owns {o.owned})"
        for unit, o in sorted(units.items())
        if o.borrowed
    ]
    return f"share {share} borrows " + ", ".join(parts) if parts else ""


class NarratorThread(threading.Thread):
    """Runs :meth:`Narrator.poll` every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, narrator: Narrator, interval: float = 1.0) -> None:
        super().__init__(name="quota-narrator", daemon=True)
        self.narrator = narrator
        self.interval = interval
        self.lock = threading.Lock()
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(self.interval):
            self._poll()

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=30)
        self._poll()  # the last word: every job's final state

    def _poll(self) -> None:
        with self.lock:
            try:
                self.narrator.poll()
            except Exception as error:  # a lost poll must not end the story (or its teardown)
                self.narrator.say(f"(could not read the queue: {error})")
