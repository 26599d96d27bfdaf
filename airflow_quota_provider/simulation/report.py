"""A replay report people can read: ``report.md`` and PNG plots, one or more policies side by side.

Plots (matplotlib's Agg canvas, no display and no global pyplot state):

- ``usage-<policy>.png``: capacity used over time by share, what it owns below,
  what it borrows above;
- ``wait-cdf.png``: the distribution of waits, one colour per policy: the
  total wait (solid) and the wait before the first start (dashed), the two
  waits of :mod:`~airflow_quota_provider.simulation.waits`;
- ``share-wait.png`` and ``share-violation.png``: each share's mean total wait
  and guarantee violation, one bar per policy.

Each table is followed by :data:`~.figures.LEGEND`; each plot says in its
title or axis what it counts.

matplotlib is an extra (``airflow-quota-provider[report]``), imported only
when plots are drawn; :func:`report_problem` says before a replay whether a
report can be written at all.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.simulation.figures import LEGEND, duration
from airflow_quota_provider.simulation.replay import Replay
from airflow_quota_provider.simulation.tables import HEADER, cells
from airflow_quota_provider.simulation.waits import first_start_waits, total_waits

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

POINTS = 1500
"""Samples per usage curve: enough for a month at half-hour steps."""
_DAY = 86400.0
INSTALL = "pip install 'airflow-quota-provider[report]'"
"""How to get what a report needs (matplotlib)."""


def report_problem(folder: Path) -> str | None:
    """Why a report could not be written into ``folder``, or ``None``: checked before a
    replay, so a long replay never ends in an error it could have had at once."""
    problem = _folder_problem(folder)
    if problem is not None:
        return problem
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"a report needs matplotlib, which is not installed; install it with: {INSTALL}"
    return None


def _folder_problem(folder: Path) -> str | None:
    """Whether ``folder`` is, or can be made, a directory to write in."""
    if folder.exists():
        if not folder.is_dir():
            return f"{folder} is a file; give a directory for report.md and the plots"
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"cannot write in {folder}: permission denied"
        return None
    for parent in folder.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                return f"cannot create directory {folder}: {parent} is a file"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"cannot create directory {folder}: permission denied in {parent}"
            return None
    return None  # unreachable: the root exists


def write_report(folder: Path, config: QueueConfig, replays: Sequence[Replay]) -> Path:
    """Write ``report.md`` and its plots into ``folder`` (created if needed); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    metrics = [r.metrics() for r in replays]
    images = [_usage_plot(folder, config, r) for r in replays]
    images += [
        _wait_cdf(folder, replays),
        _share_bars(folder, replays, metrics, "wait"),
        _share_bars(folder, replays, metrics, "violation"),
    ]
    path = folder / "report.md"
    path.write_text(_markdown(config, replays, metrics, images))
    return path


def _names(replays: Sequence[Replay]) -> list[str]:
    return [r.settings.describe() for r in replays]


def _markdown(
    config: QueueConfig,
    replays: Sequence[Replay],
    metrics: Sequence[dict[str, Any]],
    images: Sequence[str],
) -> str:
    first = replays[0]
    capacity = ", ".join(f"{n} {u}" for u, n in sorted(config.capacity.items()))
    lines = [
        f"# Replay of {Path(first.trace.source).name} on {config.job_queue}",
        "",
        f"{first.summary()}. Queue capacity {capacity}, {len(config.shares)} shares; "
        f"preemption delay {duration(first.settings.preemption_delay)}, checkpoint interval "
        f"{_optional(first.settings.checkpoint_interval)} for jobs without one.",
        "",
        "## All shares",
        "",
        *_md_table(
            ["policy", *HEADER, "wall s"],
            [
                [name, *cells(m), f"{m['wall_seconds']:.1f}"]
                for name, m in zip(_names(replays), metrics, strict=True)
            ],
        ),
        "",
        *_legend(),
    ]
    for name, data in zip(_names(replays), metrics, strict=True):
        lines += [
            f"## By share: {name}",
            "",
            *_md_table(
                ["share", *HEADER],
                [[share, *cells(m)] for share, m in data["per_share"].items()],
            ),
            "",
            *_legend(),
        ]
    lines += ["## Plots", ""] + [f"![{image}]({image})" for image in images]
    return "\n".join(lines) + "\n"


def _legend() -> list[str]:
    """The legend as a Markdown list, after each table."""
    return [f"- {line}" for line in LEGEND] + [""]


def _optional(seconds: float | None) -> str:
    return "none" if seconds is None else duration(seconds)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _usage_plot(folder: Path, config: QueueConfig, replay: Replay) -> str:
    series = replay.meter.series or []
    end = replay.result.end or 1.0
    times = [end * i / (POINTS - 1) for i in range(POINTS)]
    stamps = [t for t, _ in series]
    shares = [s.name for s in config.shares]
    owned = {s.name: sum(s.capacity.values()) for s in config.shares}
    own: dict[str, list[float]] = {s: [] for s in shares}
    borrowed: dict[str, list[float]] = {s: [] for s in shares}
    for t in times:
        index = bisect.bisect_right(stamps, t) - 1
        usage = series[index][1] if index >= 0 else {}
        for share in shares:
            used = sum(usage.get(share, {}).values())
            own[share].append(min(used, owned[share]))
            borrowed[share].append(max(0, used - owned[share]))
    figure, axes = _figure((11, 5))
    days = [t / _DAY for t in times]
    from matplotlib import colormaps

    colours = [colormaps["tab20"](i % 20) for i in range(len(shares))]
    layers = [own[s] for s in shares] + [borrowed[s] for s in shares]
    stack = axes.stackplot(days, *layers, colors=colours + colours, linewidth=0)
    for layer in stack[len(shares) :]:
        layer.set_alpha(0.45)
        layer.set_hatch("//")
    axes.axhline(sum(config.capacity.values()), color="black", linewidth=0.8)
    axes.set(
        title=f"Capacity used by share, {replay.settings.describe()} "
        "(solid: own, hatched: borrowed)",
        xlabel="day",
        ylabel="instances",
    )
    axes.legend(
        stack[: len(shares)],
        shares,
        fontsize=7,
        ncol=2,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )
    name = f"usage-{replay.settings.policy.value}.png"
    _save(figure, folder / name)
    return name


def _wait_cdf(folder: Path, replays: Sequence[Replay]) -> str:
    from matplotlib import colormaps

    figure, axes = _figure((8, 5))
    colours = [colormaps["tab10"](i % 10) for i in range(len(replays))]
    for name, replay, colour in zip(_names(replays), replays, colours, strict=True):
        jobs = replay.result.jobs.values()
        for waits, style, what in (
            (total_waits(jobs, replay.result.end), "-", "total wait"),
            (first_start_waits(jobs), "--", "first wait"),
        ):
            if waits:
                minutes = [max(w / 60, 0.01) for w in waits]
                fractions = [(i + 1) / len(waits) for i in range(len(waits))]
                label = f"{name}, {what}"
                axes.step(minutes, fractions, style, where="post", color=colour, label=label)
    axes.set(
        xscale="log",
        xlabel="wait, minutes (log; 0 shown at 0.01)",
        ylabel="fraction of jobs",
        title="Wait per job. Total (solid): before the first start and after every\n"
        "preemption until the next; first (dashed): before the first start only",
    )
    axes.legend(fontsize=8)
    _save(figure, folder / "wait-cdf.png")
    return "wait-cdf.png"


def _share_bars(
    folder: Path, replays: Sequence[Replay], metrics: Sequence[dict[str, Any]], what: str
) -> str:
    shares = list(metrics[0]["per_share"])
    figure, axes = _figure((11, 4.5))
    width = 0.8 / len(replays)
    for offset, (name, data) in enumerate(zip(_names(replays), metrics, strict=True)):
        values = [_share_value(data["per_share"][share], what) for share in shares]
        positions = [i + offset * width for i in range(len(shares))]
        axes.bar(positions, values, width, label=name)
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(shares))], shares, rotation=45)
    ylabel = "mean total wait, minutes" if what == "wait" else "guarantee violation, unit-hours"
    title = (
        "Mean total wait by share (before the first start and after every preemption)"
        if what == "wait"
        else "Guarantee violation by share (waiting demand the guarantee covers, not run)"
    )
    axes.set(ylabel=ylabel, title=title)
    axes.legend()
    name = f"share-{what}.png"
    _save(figure, folder / name)
    return name


def _share_value(data: dict[str, Any], what: str) -> float:
    if what == "wait":
        return float(data["total_wait_seconds"]["mean"]) / 60
    return float(sum(data["guarantee_violation_unit_seconds"].values())) / 3600


def _figure(size: tuple[float, float]) -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure: Figure, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
