"""A plan as people read it, in the manner of ``terraform plan``.

::

    + create quota share nlp (ml.p4d.24xlarge: 8, LEND_AND_BORROW, borrow_limit 100%, ...)
    ~ update quota share vision: capacity ml.p4d.24xlarge 6 -> 4
    - delete quota share old (destructive: not in the config)
"""

from __future__ import annotations

from collections import Counter

from airflow_quota_provider.sync.changes import Change, Plan

SYMBOLS = {"create": "+", "update": "~", "delete": "-"}


def change_line(change: Change) -> str:
    line = f"{SYMBOLS[change.action]} {change.action} {change.kind} {change.name}"
    if change.details and change.action == "create":
        line += f" ({', '.join(change.details)})"
    elif change.details:
        line += f": {'; '.join(change.details)}"
    if change.destructive is not None:
        line += f" (destructive: {change.destructive})"
    return line


def plan_lines(plan: Plan, job_queue: str) -> list[str]:
    """The whole plan: changes, a count, warnings and what cannot be done."""
    lines = [f"Plan for job queue {job_queue}:"]
    lines += [f"  {change_line(change)}" for change in plan.changes]
    lines.append(summary(plan))
    if plan.warnings:
        lines.append("Warnings (settings AWS Batch cannot hold):")
        lines += [f"  {warning}" for warning in plan.warnings]
    if plan.blockers:
        lines.append("Cannot be changed in place (apply refuses to run):")
        lines += [f"  {blocker}" for blocker in plan.blockers]
    return lines


def summary(plan: Plan) -> str:
    if not plan.changes:
        return "No changes: AWS matches the config."
    counts = Counter(change.action for change in plan.changes)
    text = ", ".join(f"{counts[a]} to {a}" for a in ("create", "update", "delete"))
    destructive = len(plan.destructive)
    if destructive:
        text += f"; {destructive} destructive (apply needs --allow-destructive)"
    return f"Plan: {text}."
