"""The GPU Quotas view of a pools fleet: the same records as for AWS Batch, from Airflow.

:class:`PoolsBackend` answers the view's and the CLI's questions
(:class:`~airflow_quota_provider.view.backend.QuotaBackend`) for a config with
``backend: airflow_pools``: it reads the managed pools' task instances, asks the
core exactly as the manager does (so the reasons are the manager's), and
builds a :class:`~airflow_quota_provider.core.views.QueueView`. Preemptions
come from the manager's database.

In the view's words a task that waits for a slot is ``RUNNABLE``; one that
holds GPUs is ``STARTING`` (queued) or ``RUNNING`` (running, deferred, or being
stopped after a preemption, with ``PREEMPTION_IN_PROGRESS``). A job's id is its
task instance, ``dag_id/run_id/task_id[map_index]``, and its link the task's
page in the Airflow UI.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from airflow_quota_provider.airflow_pools.decide import PoolPlan, running_jobs, waiting_jobs
from airflow_quota_provider.airflow_pools.figures import (
    holders_occupancy,
    scheduled,
    share_views,
)
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
from airflow_quota_provider.airflow_pools.health import health
from airflow_quota_provider.airflow_pools.heartbeat import HeartbeatBoard, config_digest
from airflow_quota_provider.airflow_pools.history_store import PoolsHistory
from airflow_quota_provider.airflow_pools.observe import observe
from airflow_quota_provider.airflow_pools.store import PreemptionRow, Store
from airflow_quota_provider.airflow_pools.task_history import TaskHistory, task_durations, task_of
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.aws_batch.job_views import PREEMPTING, task_link
from airflow_quota_provider.core import QueueState, Wait
from airflow_quota_provider.core.durations import DurationEstimate
from airflow_quota_provider.core.history_chart import HistoryReading, window
from airflow_quota_provider.core.predictions import predict
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.core.victims import next_victims
from airflow_quota_provider.core.views import (
    Explanation,
    JobView,
    NextVictim,
    PreemptionEvent,
    QueueSummary,
    QueueView,
    TaskLink,
    UnitCapacity,
)
from airflow_quota_provider.exceptions import ViewError
from airflow_quota_provider.view.explain import explain

_STATUS = {
    TaskState.SCHEDULED: "RUNNABLE",
    TaskState.QUEUED: "STARTING",
    TaskState.RUNNING: "RUNNING",
    TaskState.DEFERRED: "RUNNING",
    TaskState.RESTARTING: "RUNNING",
}


class PoolsBackend:
    """:class:`~airflow_quota_provider.view.backend.QuotaBackend` of one pools fleet, read
    at most once per ``ttl`` seconds (a page load asks several questions)."""

    def __init__(
        self,
        fleet: Fleet,
        gateway: AirflowGateway,
        store: Store,
        *,
        ttl: float = 0.0,
        clock: Callable[[], float] = time.time,
        config_path: str | None = None,
    ) -> None:
        self.fleet = fleet
        self.config_path = config_path
        """The config file ``fleet`` was read from, compared with what the manager runs."""
        self.gateway = gateway
        self.store = store
        self.ttl = ttl
        self.clock = clock
        self._cached: tuple[float, QueueView] | None = None
        self.history = TaskHistory(gateway)
        """Each DAG task's earlier successful runs, for the forecast (kept a few minutes)."""

    def queues(self) -> list[QueueSummary]:
        return [QueueSummary(self.fleet.config.job_queue, "", "ENABLED", kind="fleet")]

    def queue(self, name: str) -> QueueView:
        if name != self.fleet.config.job_queue:
            raise ViewError(
                f"no fleet {name}; this config's fleet is {self.fleet.config.job_queue}"
            )
        if self._cached is not None and self._cached[0] > time.monotonic():
            return self._cached[1]
        now = self.clock()
        beat = HeartbeatBoard(self.gateway, name).read()
        state = health(self.fleet, beat, now, self._file_digest())
        seen = observe(state.fleet, self.gateway, self.store, now)
        managed = [t for t in seen.tasks if t.pool in state.fleet.shares]
        runs = self.history.durations(
            task_of(t) for t in managed if t.state.holds or t.state is TaskState.SCHEDULED
        )
        view = pools_view(
            state.fleet,
            seen.tasks,
            seen.plan,
            now,
            seen.preemptions,
            self.store.events(),
            task_durations(managed, runs, now),
        )
        refusal = self.store.refusal()
        alerts = [refusal.message()] if refusal is not None else []
        view = replace(view, alerts=alerts + state.alerts)
        if self.ttl > 0:
            self._cached = (time.monotonic() + self.ttl, view)
        return view

    def usage_history(self, name: str, range_name: str) -> HistoryReading:
        """What the pool manager recorded
        (:class:`~airflow_quota_provider.airflow_pools.history_store.PoolsHistory`);
        :class:`~airflow_quota_provider.exceptions.HistoryNotRecorded` before it has."""
        if name != self.fleet.config.job_queue:
            raise ViewError(
                f"no fleet {name}; this config's fleet is {self.fleet.config.job_queue}"
            )
        source = PoolsHistory(self.store, self.fleet, self.clock)
        return source.reading(window(range_name, source.now()))

    def _file_digest(self) -> str | None:
        if self.config_path is None:
            return None
        try:
            return config_digest(Path(self.config_path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    def explain(self, job: str, job_queue: str | None = None) -> Explanation:
        view = self.queue(job_queue or self.fleet.config.job_queue)
        found = view.job(job)
        if found is None:
            raise ViewError(
                f"no task instance {job} waits for or holds a pool of fleet {view.name}; "
                "name it as dag_id/run_id/task_id or dag_id/run_id/task_id[map_index]"
            )
        return explain(found, view, [e for e in view.events if e.job_id == job])


def pools_view(
    fleet: Fleet,
    tasks: Sequence[PoolTask],
    plan: PoolPlan,
    now: float,
    counts: Mapping[TaskKey, int],
    preemptions: Sequence[PreemptionRow],
    durations: Mapping[str, DurationEstimate] | None = None,
) -> QueueView:
    """The view of a fleet from its task instances and the plan the core made for them,
    with the forecast made from ``durations`` (by job id; the default, a guess, for the
    others; none at all when not given)."""
    config = fleet.config
    managed = [t for t in tasks if t.pool in fleet.shares]
    holders = [t for t in managed if t.state.holds]
    running = running_jobs(fleet, holders, now, counts)
    table = holders_occupancy(fleet, holders)
    victims = next_victims(config, running, table, now)
    by_key = {t.key: t for t in managed}
    borrowing = {job.id for job in running if job.borrowing}
    # the admitted tasks start next, ahead of those left waiting
    waiting = [
        _admitted(fleet, by_key[start.key], now, index + 1, counts)
        for index, start in enumerate(plan.start)
    ]
    waiting += [
        _job(fleet, by_key[key], now, len(plan.start) + index + 1, wait, False, None, counts)
        for index, (key, wait) in enumerate(plan.waiting.items())
    ]
    held = [
        _job(fleet, t, now, None, None, str(t.key) in borrowing, victims.get(str(t.key)), counts)
        for t in holders
    ]
    view = QueueView(
        name=config.job_queue,
        arn="",
        kind="fleet",
        state="ENABLED",
        now=int(now * 1000),
        capacity=[
            UnitCapacity(
                unit,
                capacity,
                sum(t[unit].used for t in table.values() if unit in t),
                config.unowned(unit),
            )
            for unit, capacity in sorted(config.capacity.items())
        ],
        shares=share_views(fleet, table, holders, scheduled(plan, by_key)),
        waiting=waiting,
        running=held,
        events=[_event(fleet, row) for row in preemptions],
    )
    if durations is None:
        return view
    ready = [by_key[start.key] for start in plan.start] + [by_key[k] for k in plan.waiting]
    books = QueueState.from_jobs(config, running, waiting_jobs(fleet, ready, counts))
    return predict(books, now, durations).queue(view)


def _job(
    fleet: Fleet,
    task: PoolTask,
    now: float,
    position: int | None,
    wait: Wait | None,
    borrowing: bool,
    victim: NextVictim | None,
    counts: Mapping[TaskKey, int],
) -> JobView:
    share, unit = fleet.shares[task.pool]
    code, reason = (wait.code.value, wait.message) if wait is not None else (None, None)
    if task.state is TaskState.RESTARTING:
        code, reason = PREEMPTING, "cleared; Airflow is stopping its process"
    elif task.state is TaskState.DEFERRED:
        reason = "deferred (it keeps its pool slots)"
    since = task.start_date if task.state.holds and task.start_date else task.run_date
    return JobView(
        job_id=str(task.key),
        name=task.key.task_id,
        arn="",
        share=share,
        status=_STATUS[task.state],
        reason_code=code,
        reason=reason,
        priority=task.priority_weight,
        demand={unit: task.slots},
        created_at=int(task.run_date * 1000),
        started_at=int(task.start_date * 1000) if task.state.holds and task.start_date else None,
        age_seconds=max(0.0, now - since),
        position=position,
        borrowing=borrowing,
        preemptions=counts.get(task.key, 0),
        next_victim=victim,
        task=_link(task.key),
        console_url=None,
        preemptible=_preemptible(fleet, task),
    )


def _preemptible(fleet: Fleet, task: PoolTask) -> bool:
    if task.preemptible is not None:
        return task.preemptible
    share = fleet.config.share(fleet.shares[task.pool][0])
    return share is None or share.preemptible


def _admitted(
    fleet: Fleet, task: PoolTask, now: float, position: int, counts: Mapping[TaskKey, int]
) -> JobView:
    job = _job(fleet, task, now, position, None, False, None, counts)
    reason = f"its pool {task.pool} has {task.slots} open slot(s) for it; Airflow starts it next"
    return replace(job, reason_code="ADMITTED", reason=reason)


def _event(fleet: Fleet, row: PreemptionRow) -> PreemptionEvent:
    # a pool the config no longer names: its slots, of no known unit
    share, unit = fleet.shares.get(row.pool, (row.pool, "slot"))
    stopped = int(row.at.timestamp() * 1000)
    started = int(row.started.timestamp() * 1000) if row.started is not None else stopped
    key = row.key
    return PreemptionEvent(
        job_id=str(key),
        name=key.task_id,
        share=share,
        started_at=started,
        stopped_at=stopped,
        kind=row.kind,
        preemptor=row.preemptor,
        reason=row.note,
        work_lost=max(0.0, (stopped - started) / 1000) * row.slots,
        checkpointed=False,
        training_job="",
        task=_link(key),
        console_url=None,
        work_lost_unit=unit,
    )


def _link(key: TaskKey) -> TaskLink | None:
    """The task instance's page in the Airflow UI (the view's link for every job)."""
    return task_link(key.tags())
