"""Replay metrics as aligned text tables: one replay by share, or policies side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_quota_provider.simulation.figures import LEGEND, duration, per_unit
from airflow_quota_provider.simulation.replay import Replay


def table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _unit_hours(values: Mapping[str, float]) -> str:
    return f"{sum(values.values()) / 3600:,.0f}"


HEADER = (
    "utilization",
    "mean wait",
    "p95 wait",
    "mean first wait",
    "pending unit-h",
    "violation unit-h",
    "preemptions",
    "lost unit-h",
)
"""The columns of :func:`cells`; :data:`~.figures.LEGEND` says what each counts."""


def cells(data: Mapping[str, Any]) -> list[str]:
    """One row of a replay's figures (its ``metrics()`` or one share's) for a person."""
    return [
        per_unit(data["utilization"]),
        duration(data["total_wait_seconds"]["mean"]),
        duration(data["total_wait_seconds"]["p95"]),
        duration(data["first_start_wait_seconds"]["mean"]),
        _unit_hours(data["pending_unit_seconds"]),
        _unit_hours(data["guarantee_violation_unit_seconds"]),
        f"{data['preemptions']:,}",
        f"{data['lost_work_unit_seconds'] / 3600:,.0f}",
    ]


def replay_text(replay: Replay) -> str:
    """Per share, then all shares, of one replay; a share's utilization is of what it owns."""
    metrics = replay.metrics()
    rows: list[tuple[str, ...]] = [("share", *HEADER)]
    for share, data in metrics["per_share"].items():
        rows.append((share, *cells(data)))
    rows.append(("all", *cells(metrics)))
    jobs = metrics["jobs"]
    return (
        f"{replay.settings.describe()}: {jobs['succeeded']:,} succeeded, {jobs['failed']:,} "
        f"failed, {jobs['rejected']:,} refused; {metrics['cycles']:,} cycles in "
        f"{metrics['wall_seconds']:.1f} s\n{table(rows)}\n{_legend()}"
    )


def comparison_text(replays: Sequence[Replay]) -> str:
    """All shares per policy, then each share's mean (total) wait per policy."""
    metrics = [r.metrics() for r in replays]
    names = [r.settings.policy.value for r in replays]
    rows: list[tuple[str, ...]] = [("policy", *HEADER, "wall s")]
    for name, data in zip(names, metrics, strict=True):
        rows.append((name, *cells(data), f"{data['wall_seconds']:.1f}"))
    shares: list[tuple[str, ...]] = [("share mean wait", *names)]
    for share in metrics[0]["per_share"]:
        waits = (m["per_share"][share]["total_wait_seconds"]["mean"] for m in metrics)
        shares.append((share, *map(duration, waits)))
    load = replays[0].settings.load
    return f"load {load:g}\n{table(rows)}\n\n{table(shares)}\n{_legend()}"


def _legend() -> str:
    return "\n".join(LEGEND)
