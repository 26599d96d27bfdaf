"""Metrics through Airflow's ``Stats`` (StatsD, Datadog or OpenTelemetry, as configured).

Names carry the queue, share and instance type (dots in them become ``_``),
so plain StatsD tells shares apart; the same values go as tags (``job_queue``,
``quota_share``, ``instance_type``) for backends that take tags.

Gauges, per share and instance type, set each time the view's backend reads
a queue: ``quota_provider.share.<queue>.<share>.<type>.used`` (instances it
holds), ``.borrowed``, ``.lent`` and ``.waiting`` (instances its waiting jobs
ask for). Counters, per share, from ``QuotaTrainingOperator``:
``quota_provider.<queue>.<share>.submissions``, ``.preemptions`` (counted
when the task ends) and ``.failures``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from airflow_quota_provider.view.model import QueueView

PREFIX = "quota_provider"
GAUGES = ("used", "borrowed", "lent", "waiting")
COUNTERS = ("submissions", "preemptions", "failures")

Gauge = tuple[str, int, dict[str, str]]


def part(text: str) -> str:
    """A metric name part: letters, digits, ``_`` and ``-`` (Airflow's name rules)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def share_gauges(view: QueueView) -> Iterator[Gauge]:
    """Every gauge of one queue as ``(name, value, tags)``."""
    for share in view.shares:
        units = {u.unit: u for u in share.units}
        # Every unit of the queue, zeros included: a gauge that stopped being sent
        # would keep its last value (a share that borrowed once would seem to borrow forever).
        queue_units = {c.unit for c in view.capacity}
        for unit in sorted(queue_units | set(units) | set(share.waiting_instances)):
            figures = units.get(unit)
            values = {
                "used": figures.used if figures else 0,
                "borrowed": figures.borrowed if figures else 0,
                "lent": figures.lent if figures else 0,
                "waiting": share.waiting_instances.get(unit, 0),
            }
            tags = {"job_queue": view.name, "quota_share": share.name, "instance_type": unit}
            base = f"{PREFIX}.share.{part(view.name)}.{part(share.name)}.{part(unit)}"
            for gauge in GAUGES:
                yield f"{base}.{gauge}", values[gauge], tags


def emit_gauges(view: QueueView) -> None:
    from airflow.sdk.observability.stats import Stats

    for name, value, tags in share_gauges(view):
        Stats.gauge(name, value, tags=tags)


def count(counter: str, job_queue: str, quota_share: str, by: int = 1) -> None:
    """Add ``by`` to one of :data:`COUNTERS` of a share."""
    if counter not in COUNTERS:
        raise ValueError(f"counter must be one of {', '.join(COUNTERS)}, got {counter!r}")
    if by <= 0:
        return
    from airflow.sdk.observability.stats import Stats

    job_queue = job_queue.rsplit("/", 1)[-1]  # a queue's name from its ARN
    name = f"{PREFIX}.{part(job_queue)}.{part(quota_share)}.{counter}"
    Stats.incr(name, count=by, tags={"job_queue": job_queue, "quota_share": quota_share})
