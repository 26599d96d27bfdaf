"""How a replay's figures are shown to people: their names, what each counts, their format.

Every text table, the report and the timeline's summary say what their
figures count with :data:`LEGEND`, so a reader never has to guess whether a
wait includes the time after a preemption. ``--json`` keeps plain numbers
(seconds, unit-seconds, fractions) under keys that name the figure.
"""

from __future__ import annotations

from collections.abc import Mapping

LEGEND = (
    "wait: total time a job waited to run, before its first start and after every "
    "preemption until it ran again (a job still waiting at the end counts up to the end); "
    "first wait: before the first start only, of jobs that started",
    "utilization: used over what the share owns (above 100% when it borrows; all: over "
    "the queue's capacity), per unit; pending: waiting demand over time; violation: "
    "waiting demand the share's guarantee covers (it fits in what the share owns once what "
    "it lends is reclaimed and, with in-share preemption, its lower-priority jobs are "
    "stopped) that did not run; lost: work preempted jobs lost since their last checkpoint",
)
"""One line per group of figures, the same in every table and in the report."""

_STEPS = ((86400, "d", 3600, "h"), (3600, "h", 60, "m"), (60, "m", 1, "s"))


def duration(seconds: float) -> str:
    """``seconds`` for a person: the two largest units (``11d 13h``, ``4m 05s``),
    rounded to the smaller one; under a minute ``42s`` (one decimal under ten)."""
    if seconds < 59.5:
        shown = f"{seconds:.1f}" if seconds < 9.95 else f"{seconds:.0f}"
        return f"{shown.removesuffix('.0')}s"
    for size, name, small, small_name in _STEPS:
        smalls = round(seconds / small)
        if smalls >= size // small:
            whole, rest = divmod(smalls, size // small)
            return f"{whole}{name} {rest:02d}{small_name}"
    raise AssertionError("unreachable: a minute or more always matches a step")


def per_unit(values: Mapping[str, float | None], shown: str = "{:.1%}") -> str:
    """``gpu 66.7%, cpu 0.1%``: each unit's value named, ``-`` for none."""
    parts = [f"{unit} {shown.format(v)}" for unit, v in values.items() if v is not None]
    return ", ".join(parts) or "-"
