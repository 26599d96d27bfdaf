"""A plan as people read it, in the manner of ``terraform plan``.

::

    + create quota share nlp (ml.p4d.24xlarge: 8, LEND_AND_BORROW, borrow_limit 100%, ...)
    ~ update quota share vision: capacity ml.p4d.24xlarge 6 -> 4
    - delete quota share old (destructive: not in the config)

A Batch plan and a pools plan read alike; only their :class:`Wording` differs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from airflow_quota_provider.sync.changes import Change, Plan

SYMBOLS = {"create": "+", "update": "~", "delete": "-"}


@dataclass(frozen=True)
class Wording:
    """The headings of one kind of plan; ``title`` has a ``{name}`` to fill in."""

    title: str
    no_changes: str
    warnings: str
    blockers: str
    blocked: str
    """Why a refused apply with blockers changed nothing."""
    notes: str = ""


BATCH = Wording(
    title="Plan for job queue {name}:",
    no_changes="No changes: AWS matches the config.",
    warnings="Warnings (settings AWS Batch cannot hold):",
    blockers="Cannot be changed in place (apply refuses to run):",
    blocked="AWS cannot make these changes in place",
)
POOLS = Wording(
    title="Plan for the pools of fleet {name}:",
    no_changes="No changes: Airflow's pools match the config.",
    warnings="Warnings:",
    blockers="Not now (apply refuses to run):",
    blocked="these changes must not be made now",
    notes="Left to the pool manager (it sets the slots of its pools at every cycle):",
)


def change_line(change: Change) -> str:
    line = f"{SYMBOLS[change.action]} {change.action} {change.kind} {change.name}"
    if change.details and change.action == "create":
        line += f" ({', '.join(change.details)})"
    elif change.details:
        line += f": {'; '.join(change.details)}"
    if change.destructive is not None:
        line += f" (destructive: {change.destructive})"
    return line


def plan_lines(plan: Plan, name: str, wording: Wording = BATCH) -> list[str]:
    """The whole plan: changes, a count, notes, warnings and what cannot be done.

    :param name: the job queue (or fleet) the plan is for.
    """
    lines = [wording.title.format(name=name)]
    lines += [f"  {change_line(change)}" for change in plan.changes]
    if plan.changes or not plan.blockers:
        # a plan that changes nothing because of its blockers says only what blocks it
        lines.append(summary(plan, wording))
    for heading, items in (
        (wording.notes, plan.notes),
        (wording.warnings, plan.warnings),
        (wording.blockers, plan.blockers),
    ):
        if items:
            lines.append(heading)
            lines += [f"  {item}" for item in items]
    return lines


def summary(plan: Plan, wording: Wording = BATCH) -> str:
    """How many changes of each kind; ``no_changes`` only for a plan that neither
    changes nor blocks anything."""
    if plan.empty:
        return wording.no_changes
    counts = Counter(change.action for change in plan.changes)
    text = ", ".join(f"{counts[a]} to {a}" for a in ("create", "update", "delete"))
    destructive = len(plan.destructive)
    if destructive:
        text += f"; {destructive} destructive (apply needs --allow-destructive)"
    return f"Plan: {text}."
