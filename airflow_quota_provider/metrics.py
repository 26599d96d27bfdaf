"""Metrics through Airflow's ``Stats`` (StatsD, Datadog or OpenTelemetry, as configured).

Names carry the queue, share and instance type (dots in them become ``_``),
so plain StatsD tells shares apart; the same values go as tags (``job_queue``,
``quota_share``, ``instance_type``) for backends that take tags.

Gauges, per share and instance type (a pools fleet's unit), set each time the
view's backend reads an AWS Batch queue and at every cycle of the pool manager:
``quota_provider.share.<queue>.<share>.<type>.used`` (instances it holds),
``.borrowed``, ``.lent`` and ``.waiting`` (instances its waiting jobs ask for);
for a pools fleet, ``<queue>`` is the config's ``job_queue`` (the fleet's name).
Counters, per share: from ``QuotaTrainingOperator``
``quota_provider.<queue>.<share>.submissions``, ``.preemptions`` (counted
when the task ends) and ``.failures``; from the pool manager ``.preemptions``
(each task it clears or fails for another) and ``.failures`` (each task it
fails: its preemptions used up, it could never fit, or its settings are wrong).
Per fleet, from the reconciler: ``quota_provider.<queue>.orphans_stopped`` (jobs
it stopped because no task watched them any more).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from airflow_quota_provider.core.views import QueueView, ShareView

PREFIX = "quota_provider"
GAUGES = ("used", "borrowed", "lent", "waiting")
COUNTERS = ("submissions", "preemptions", "failures", "unadmitted_starts")

Gauge = tuple[str, int, dict[str, str]]


def part(text: str) -> str:
    """A metric name part: letters, digits, ``_`` and ``-`` (Airflow's name rules)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def share_gauges(view: QueueView) -> Iterator[Gauge]:
    """Every gauge of one queue as ``(name, value, tags)``."""
    return fleet_gauges(view.name, [c.unit for c in view.capacity], view.shares)


def fleet_gauges(queue: str, units: Iterable[str], shares: Iterable[ShareView]) -> Iterator[Gauge]:
    """Every gauge of the ``shares`` of one queue (or pools fleet) with these ``units``."""
    queue_units = set(units)
    for share in shares:
        by_unit = {u.unit: u for u in share.units}
        # Every unit of the queue, zeros included: a gauge that stopped being sent
        # would keep its last value (a share that borrowed once would seem to borrow forever).
        for unit in sorted(queue_units | set(by_unit) | set(share.waiting_instances)):
            figures = by_unit.get(unit)
            values = {
                "used": figures.used if figures else 0,
                "borrowed": figures.borrowed if figures else 0,
                "lent": figures.lent if figures else 0,
                "waiting": share.waiting_instances.get(unit, 0),
            }
            tags = {"job_queue": queue, "quota_share": share.name, "instance_type": unit}
            base = f"{PREFIX}.share.{part(queue)}.{part(share.name)}.{part(unit)}"
            for gauge in GAUGES:
                yield f"{base}.{gauge}", values[gauge], tags


def emit_gauges(view: QueueView) -> None:
    emit(share_gauges(view))


def start() -> None:
    """Give ``Stats`` its backend in a process Airflow did not start (the pool manager's,
    the reconciler's), as Airflow's own processes do. Airflow 3.2's ``Stats`` sends
    nothing until a process sets it up; earlier releases read the configuration on first
    use, and from 3.3 on the task SDK sets it up when imported."""
    import inspect

    try:
        from airflow.observability.metrics import stats_utils
    except ImportError:
        return  # before Airflow 3.2
    factory: Any = stats_utils.get_stats_factory
    if not inspect.signature(factory).parameters:
        return  # Airflow 3.3 and later
    from airflow.providers.common.compat.sdk import Stats

    stats: Any = Stats
    stats.initialize(factory=factory(Stats))


def emit(gauges: Iterable[Gauge]) -> None:
    from airflow.providers.common.compat.sdk import Stats

    for name, value, tags in gauges:
        Stats.gauge(name, value, tags=tags)


def count(counter: str, job_queue: str, quota_share: str, by: int = 1) -> None:
    """Add ``by`` to one of :data:`COUNTERS` of a share."""
    if counter not in COUNTERS:
        raise ValueError(f"counter must be one of {', '.join(COUNTERS)}, got {counter!r}")
    if by <= 0:
        return
    from airflow.providers.common.compat.sdk import Stats

    job_queue = job_queue.rsplit("/", 1)[-1]  # a queue's name from its ARN
    name = f"{PREFIX}.{part(job_queue)}.{part(quota_share)}.{counter}"
    Stats.incr(name, count=by, tags={"job_queue": job_queue, "quota_share": quota_share})


def count_orphans(job_queue: str, by: int) -> None:
    """Add ``by`` to the jobs the reconciler stopped for one job queue or pools fleet."""
    if by <= 0:
        return
    from airflow.providers.common.compat.sdk import Stats

    job_queue = job_queue.rsplit("/", 1)[-1]
    name = f"{PREFIX}.{part(job_queue)}.orphans_stopped"
    Stats.incr(name, count=by, tags={"job_queue": job_queue})


def count_refusal(job_queue: str) -> None:
    """Count a change Airflow refused the pool manager of one pools fleet."""
    from airflow.providers.common.compat.sdk import Stats

    name = f"{PREFIX}.{part(job_queue)}.refusals"
    Stats.incr(name, tags={"job_queue": job_queue})


def count_heal_differences(job_queue: str, by: int) -> None:
    """Count what a heal of the pool manager's kept state found different from Airflow's
    (``manager.heal_differences``; there should be none: alert on any)."""
    from airflow.providers.common.compat.sdk import Stats

    name = f"{PREFIX}.{part(job_queue)}.manager.heal_differences"
    Stats.incr(name, count=by, tags={"job_queue": job_queue})


def manager_health(job_queue: str, *, cycled: bool, config_refused: bool) -> None:
    """The pool manager of one pools fleet after a cycle: ``manager.cycles`` counts the cycles
    that ended well (a rate of 0 means nobody manages the fleet), ``manager.failing`` is 1
    while its cycles fail, ``manager.config_refused`` 1 while it refuses its config file's
    newer text."""
    from airflow.providers.common.compat.sdk import Stats

    tags = {"job_queue": job_queue}
    name = f"{PREFIX}.{part(job_queue)}.manager"
    if cycled:
        Stats.incr(f"{name}.cycles", tags=tags)
    Stats.gauge(f"{name}.failing", 0 if cycled else 1, tags=tags)
    Stats.gauge(f"{name}.config_refused", 1 if config_refused else 0, tags=tags)
