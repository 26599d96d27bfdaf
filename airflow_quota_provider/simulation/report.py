"""A replay report people can read: ``report.md`` and PNG plots, one or more policies side by side.

Plots (matplotlib's Agg canvas, no display and no global pyplot state):

- ``usage-<policy>.png``: capacity used over time by share, what it owns below,
  what it borrows above;
- ``wait-cdf.png``: the distribution of waits, one line per policy;
- ``share-wait.png`` and ``share-violation.png``: each share's mean wait and
  guarantee violation, one bar per policy.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.simulation.replay import Replay
from airflow_quota_provider.simulation.tables import HEADER, cells

POINTS = 1500
"""Samples per usage curve: enough for a month at half-hour steps."""
_DAY = 86400.0


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
        f"preemption delay {first.settings.preemption_delay:g} s, checkpoint interval "
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
        "Utilization is of the queue's capacity until the last job ends; pending is waiting "
        "demand integrated over time; violation is waiting demand a share's guarantee covers "
        "(it fits in what the share owns and does not use) that did not run.",
        "",
    ]
    for name, data in zip(_names(replays), metrics, strict=True):
        lines += [
            f"## By share: {name}",
            "",
            "A share's utilization is of what it owns (above 100% when it borrows).",
            "",
            *_md_table(
                ["share", *HEADER],
                [[share, *cells(m)] for share, m in data["per_share"].items()],
            ),
            "",
        ]
    lines += ["## Plots", ""] + [f"![{image}]({image})" for image in images]
    return "\n".join(lines) + "\n"


def _optional(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds:g} s"


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
    figure, axes = _figure((8, 5))
    for name, replay in zip(_names(replays), replays, strict=True):
        jobs = replay.result.jobs.values()
        waits = sorted((j.attempts[0].start - j.spec.submit) / 60 for j in jobs if j.attempts)
        if waits:
            fractions = [(i + 1) / len(waits) for i in range(len(waits))]
            axes.step([max(w, 0.01) for w in waits], fractions, where="post", label=name)
    axes.set(
        xscale="log",
        xlabel="wait, minutes (log; 0 shown at 0.01)",
        ylabel="fraction of jobs",
        title="Wait before the first start",
    )
    axes.legend()
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
    ylabel = "mean wait, minutes" if what == "wait" else "guarantee violation, unit-hours"
    axes.set(ylabel=ylabel, title=f"{ylabel.split(',')[0].capitalize()} by share")
    axes.legend()
    name = f"share-{what}.png"
    _save(figure, folder / name)
    return name


def _share_value(data: dict[str, Any], what: str) -> float:
    if what == "wait":
        return float(data["wait_seconds"]["mean"]) / 60
    return float(sum(data["guarantee_violation_unit_seconds"].values())) / 3600


def _figure(size: tuple[float, float]) -> tuple[Figure, Axes]:
    figure = Figure(figsize=size)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure: Figure, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
