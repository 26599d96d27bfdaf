"""The view as terminal text: what ``airflow-quota status``, ``explain`` and ``events`` print.

Colour (ANSI) only when asked: borrowing in yellow, lending in green,
reasons a job waits and preemptions in red.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from airflow_quota_provider.aws_batch.job_views import PREEMPTING
from airflow_quota_provider.core.predictions import end_text
from airflow_quota_provider.core.times import duration, when
from airflow_quota_provider.core.views import (
    Explanation,
    JobView,
    PreemptionEvent,
    QueueView,
    ShareView,
)
from airflow_quota_provider.view.explain import instances

UNIT_COLUMNS = ("UNIT", "OWNED", "USED", "OWN", "BORROWED", "LENT", "IDLE", "LIMIT")


@dataclass(frozen=True)
class Style:
    colour: bool = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def borrowed(self, text: str) -> str:
        return self._wrap("33", text)

    def lent(self, text: str) -> str:
        return self._wrap("32", text)

    def alert(self, text: str) -> str:
        return self._wrap("31", text)


def status_lines(view: QueueView, style: Style) -> list[str]:
    capacity = ", ".join(
        f"{c.unit} {c.used}/{c.capacity} in use ({c.unowned} owned by no share)"
        for c in view.capacity
    )
    lines = [
        style.bold(f"{view.kind} {view.name} ({view.state}) at {when(view.now)}"),
        *(style.alert(f"ALERT: {alert}") for alert in view.alerts),
        f"capacity: {capacity or 'none'}",
    ]
    for share in view.shares:
        lines += ["", *share_lines(view, share, style)]
    return lines


def share_lines(view: QueueView, share: ShareView, style: Style) -> list[str]:
    head = (
        f"share {share.name}: {share.strategy}, {share.borrowing}, {share.state}; "
        f"{share.running} running, {share.waiting} waiting"
    )
    rows = [
        [
            u.unit,
            str(u.owned),
            str(u.used),
            str(u.own_use),
            style.borrowed(str(u.borrowed)) if u.borrowed else "0",
            style.lent(str(u.lent)) if u.lent else "0",
            str(u.idle),
            str(u.limit),
        ]
        for u in share.units
    ]
    lines = [style.bold(head), *("  " + line for line in table(UNIT_COLUMNS, rows))]
    for job in (j for j in view.waiting if j.share == share.name):
        place = f"#{job.position}" if job.position is not None else "#>100"
        reason = f"{job.reason_code}: {job.reason}" if job.reason_code else job.reason or "-"
        lines.append(
            f"  waiting {place} {job_label(job)}: {instances(job.demand)}, "
            f"{duration(job.age_seconds)}; {style.alert(reason)}"
        )
        if job.predicted_start is not None:
            start = job.predicted_start
            lines.append(f"    starts {start.text}: {start.basis}")
    for job in (j for j in view.running if j.share == share.name):
        note = running_note(job, style, view.now)
        lines.append(f"  {job.status.lower()} {job_label(job)}: {note}")
    return lines


def running_note(job: JobView, style: Style, now: int | None = None) -> str:
    note = f"{instances(job.demand)}, {duration(job.age_seconds)}"
    if job.expected_end is not None and now is not None:
        note += ", " + end_text(job.expected_end, now)
    if job.borrowing:
        note += ", " + style.borrowed("borrowing")
    if not job.preemptible:
        note += ", not preemptible"
    if job.reason_code == PREEMPTING:
        note += ", " + style.alert(f"being preempted: {job.reason}")
    elif job.next_victim is not None:
        victim = job.next_victim
        note += ", " + style.alert(f"next victim if {victim.by_share} reclaims ({victim.kind})")
    return note


def job_label(job: JobView) -> str:
    priority = "?" if job.priority is None else str(job.priority)
    return f"{job.name} ({job.job_id}, priority {priority})"


def explanation_lines(found: Explanation, style: Style) -> list[str]:
    lines = [style.bold(found.summary), *(f"  {line}" for line in found.details)]
    if found.job.task is not None:
        task = found.job.task
        lines.append(f"  Airflow task: {task.dag_id} / {task.task_id} / {task.run_id}")
    if found.job.console_url:
        lines.append(f"  AWS console: {found.job.console_url}")
    for event in found.preemptions:
        lines.append(style.alert(f"  preempted at {when(event.stopped_at)}: {event.reason}"))
        lines.append(f"    work lost: {lost(event)}")
    return lines


def event_lines(events: Sequence[PreemptionEvent], style: Style) -> list[str]:
    if not events:
        return ["no preemptions in the window"]
    columns = ("WHEN", "JOB", "SHARE", "KIND", "BY", "WORK LOST", "WHY")
    rows = [
        [
            when(e.stopped_at),
            f"{e.name} ({e.job_id})",
            e.share,
            style.alert(e.kind or "-"),
            f"{e.preemptor_name} ({e.preemptor})" if e.preemptor_name else e.preemptor or "unknown",
            lost(e),
            e.reason,
        ]
        for e in events
    ]
    return table(columns, rows)


def lost(event: PreemptionEvent) -> str:
    hours = event.work_lost / 3600
    unit = f"{event.work_lost_unit}-h"
    return f"{hours:.2f} {unit}" + ("" if event.checkpointed else " (no checkpoint)")


def table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns; widths ignore ANSI colour codes."""
    widths = [len(c) for c in columns]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], _visible(cell))
    lines = []
    for row in [list(columns), *rows]:
        cells = [cell + " " * (widths[i] - _visible(cell)) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _visible(text: str) -> int:
    length, escape = 0, False
    for char in text:
        if char == "\033":
            escape = True
        elif escape and char == "m":
            escape = False
        elif not escape:
            length += 1
    return length
