"""``airflow-quota recommend``: search share capacities and strategies for a trace,
compare the proposal with the current config and write it as a config file."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from airflow_quota_provider.cli.progress import StatusLine
from airflow_quota_provider.cli.replay import number_type
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.config import config_to_dict, parse_config
from airflow_quota_provider.core.model import UNLIMITED_BORROW, QueueConfig, Share, Sharing
from airflow_quota_provider.exceptions import ConfigError, ScenarioError
from airflow_quota_provider.simulation.figures import LEGEND, duration, per_unit
from airflow_quota_provider.simulation.policies import Policy
from airflow_quota_provider.simulation.recommend import (
    Metrics,
    Score,
    Search,
    Trial,
    search,
    starting_point,
    violation,
)
from airflow_quota_provider.simulation.replay import ReplaySettings, replay
from airflow_quota_provider.simulation.tables import HEADER, cells, table
from airflow_quota_provider.simulation.traces import Trace, TraceFormat, read_trace

_CAPACITY = re.compile(r"([A-Za-z0-9._-]{1,64})=(\d+)")
DEFAULT_BUDGET = 16
"""Replays of a search by default: about a minute and a half on the Helios month."""


class UsageError(Exception):
    """A command-line option that does not fit the trace or the config."""


def _capacity(text: str) -> tuple[str, int]:
    match = _CAPACITY.fullmatch(text.strip())
    if match is None or int(match.group(2)) < 1:
        raise argparse.ArgumentTypeError(
            f"must be UNIT=COUNT with a count >= 1, e.g. gpu=856, got {text!r}"
        )
    return match.group(1), int(match.group(2))


def _budget(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of replays >= 1, got {text!r}")
    return int(text)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "recommend",
        help="propose share capacities and strategies for a job trace",
        description="Search share capacities and strategies that wait least on a job trace "
        "(aws policy): fewest refused jobs, then no more guarantee violation than the "
        "current config, then the least mean total wait (before the first start and after "
        "every preemption until the next start). A local search moves capacity from "
        "shares that leave theirs idle to shares that wait, and opens shares to lending "
        "and borrowing, keeping a move when the replayed trace scores better. Prints the "
        "proposal against the current config and writes it as a config file.",
    )
    parser.add_argument("--trace", required=True, metavar="FILE", help="the job trace")
    parser.add_argument(
        "--trace-format", choices=[f.value for f in TraceFormat], default=TraceFormat.CSV.value
    )
    parser.add_argument(
        "--capacity", type=_capacity, action="append", required=True, metavar="UNIT=COUNT",
        help="the queue's capacity of a unit, e.g. gpu=856; repeat for more units",
    )  # fmt: skip
    parser.add_argument(
        "--shares", help="share names, comma-separated; default: the config's, else the trace's"
    )
    parser.add_argument(
        "--config", metavar="FILE",
        help="the current config: the search starts from it and may not break its "
        "guarantees more; without it, the capacity split by each share's work",
    )  # fmt: skip
    parser.add_argument("--job-queue", help="the proposal's job queue name")
    parser.add_argument(
        "--budget", type=_budget, default=DEFAULT_BUDGET, metavar="REPLAYS",
        help=f"replays the search may run, the start's included; default {DEFAULT_BUDGET}",
    )  # fmt: skip
    parser.add_argument(
        "--allow-violation", type=number_type(0, strict=False), default=0.0, metavar="UNIT_HOURS",
        help="guarantee violation a proposal may have beyond the current config's; default 0",
    )  # fmt: skip
    parser.add_argument("--load", type=number_type(0, strict=True), default=1.0)
    parser.add_argument(
        "--checkpoint-interval", type=number_type(0, strict=True), metavar="SECONDS"
    )
    parser.add_argument(
        "--preemption-delay", type=number_type(0, strict=False), default=0.0, metavar="SECONDS"
    )
    parser.add_argument(
        "--output", "-o", default="recommended-quota.yaml", metavar="FILE",
        help="where to write the proposal; default recommended-quota.yaml",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        trace = read_trace(args.trace, TraceFormat(args.trace_format))
        current = load_config(args.config) if args.config else None
        names = _names(args.shares, current, trace)
        capacity = _units(args.capacity, current)
        if not Path(args.output).resolve().parent.is_dir():  # known before a long search
            raise UsageError(f"argument --output: no folder {str(Path(args.output).parent)!r}")
        job_queue = args.job_queue or (current.job_queue if current else "recommended")
        # validated like a file, so a proposal is always a config AWS would accept
        start = parse_config(
            config_to_dict(starting_point(job_queue, capacity, names, trace.jobs, current))
        )
    except UsageError as error:
        print(f"airflow-quota recommend: error: {error}", file=sys.stderr)
        return 2
    except (ConfigError, ScenarioError) as error:
        where = f"{error.source}: " if error.source else "the proposal: "
        for problem in error.problems:
            print(f"{where}{problem}", file=sys.stderr)
        return 1
    settings = ReplaySettings(
        Policy.AWS, args.load, args.checkpoint_interval, args.preemption_delay
    )
    started = time.perf_counter()
    found, before = _search(trace, settings, start, current, args)
    wall = time.perf_counter() - started
    print(f"read {len(trace.jobs):,} jobs from {trace.source}", file=sys.stderr)
    label = "current" if current is not None else "start (split by work)"
    extra = f" plus {args.allow_violation:g}" if args.allow_violation else ""
    allowed = f"the {label} config's{extra} ({found.allowance / 3600:,.1f} unit-h)"
    print(_report(settings, found, current or start, before, wall, label, allowed))
    proposal = config_to_dict(parse_config(config_to_dict(found.config)))  # as a file says
    with open(args.output, "w", encoding="utf-8") as file:
        yaml.safe_dump(proposal, file, sort_keys=False)
    print(f"\nwritten to {args.output}")
    return 0


def _search(
    trace: Trace,
    settings: ReplaySettings,
    start: QueueConfig,
    current: QueueConfig | None,
    args: argparse.Namespace,
) -> tuple[Search, Metrics]:
    """The search's outcome and the metrics it is compared with: the current config's
    (replayed apart, outside the budget, when ``--capacity`` rescaled it), else the start's."""

    def evaluate(config: QueueConfig) -> Metrics:
        # guarantees are those shares have today, whatever a proposal owns
        return replay(config, trace, settings, guarantees=current or start).metrics()

    budget = args.budget
    with StatusLine() as line:
        line.show(f"replay 1/{budget}: the start")
        before = start_metrics = evaluate(start)
        if current is not None and (current.capacity, current.shares) != (
            start.capacity,
            start.shares,
        ):
            line.show("replaying the current config (its capacity differs)")
            before = evaluate(current)

        def progress(trial: Trial, best: Score) -> None:
            line.show(
                f"replay {trial.number}/{budget}, best mean wait {duration(best.mean_wait)}"
                f"; tried {trial.move}"
            )

        allowance = violation(before) + args.allow_violation * 3600
        return search(start, start_metrics, evaluate, budget, allowance, progress), before


def _names(text: str | None, current: QueueConfig | None, trace: Trace) -> list[str]:
    """The shares to propose capacities for; every share of the trace must be one."""
    known = [s.name for s in current.shares] if current else []
    names = [n.strip() for n in text.split(",")] if text else known
    if not names:
        names = sorted({job.share for job in trace.jobs})
    if "" in names:
        raise UsageError(
            f"argument --shares: must be share names separated by commas, got {text!r}"
        )
    twice = sorted(n for n, count in Counter(names).items() if count > 1)
    if twice:
        raise UsageError(f"argument --shares: names {', '.join(twice)} twice")
    unknown = [n for n in names if known and n not in known]
    if unknown:
        raise UsageError(
            f"argument --shares: {', '.join(unknown)} not in the config; its shares are "
            f"{', '.join(known)}"
        )
    jobs = Counter(job.share for job in trace.jobs if job.share not in names)
    if jobs:
        missing = ", ".join(f"{share} ({count:,} jobs)" for share, count in sorted(jobs.items()))
        raise UsageError(
            f"the trace has jobs of shares the proposal would not have: {missing}; "
            "name them in --shares (or in the config)"
        )
    return names


def _units(given: Sequence[tuple[str, int]], current: QueueConfig | None) -> dict[str, int]:
    capacity = dict(given)
    twice = sorted(u for u, count in Counter(u for u, _ in given).items() if count > 1)
    if twice:
        raise UsageError(f"argument --capacity: names unit {', '.join(twice)} twice")
    if current is not None and sorted(capacity) != sorted(current.capacity):
        raise UsageError(
            f"argument --capacity: the units must be the config's ({', '.join(current.units)}), "
            f"got {', '.join(sorted(capacity))}"
        )
    return capacity


def _report(
    settings: ReplaySettings,
    found: Search,
    current: QueueConfig,
    before: Metrics,
    wall: float,
    label: str,
    allowed: str,
) -> str:
    after = found.metrics
    kept = "\n".join(f"  {t.move}: mean wait {duration(t.score.mean_wait)}" for t in found.kept)
    overall = table(
        [
            ("config", *HEADER),
            (label, *cells(before)),
            ("proposed", *cells(after)),
        ]
    )
    gain = _change(before["total_wait_seconds"]["mean"], after["total_wait_seconds"]["mean"])
    legend = "\n".join(LEGEND)
    return (
        f"objective: least mean total wait per job, with no more refused jobs and no more "
        f"violation of today's guarantees than {allowed}\n"
        f"search: {len(found.trials)} replays of the whole trace ({settings.describe()}) in "
        f"{wall:,.1f} s, stopped at the {found.stopped}; kept:\n{kept}\n{_beyond(found)}\n"
        f"{overall}\nmean wait {gain}\n\n{_shares(current, before, found.config, after)}\n"
        f"{legend}"
    )


def _beyond(found: Search) -> str:
    """The least waiting move the guarantees ruled out, if it waited less than the proposal."""
    over = [t for t in found.trials if t.score.excess_violation > 0]
    best = min(over, key=lambda t: (t.score.mean_wait, t.number), default=None)
    if best is None or best.score.mean_wait >= found.kept[-1].score.mean_wait:
        return ""
    return (
        f"least wait ruled out by the guarantees: {best.move} (replay {best.number}), mean wait "
        f"{duration(best.score.mean_wait)}, {best.score.excess_violation / 3600:,.2f} unit-h "
        "of violation beyond what is allowed (--allow-violation)\n"
    )


def _shares(current: QueueConfig, before: Metrics, proposed: QueueConfig, after: Metrics) -> str:
    rows: list[tuple[str, ...]] = [
        ("share", "owns", "sharing", "mean wait", "p95 wait", "violation unit-h",
         "utilization", "preemptions"),
    ]  # fmt: skip
    for share in proposed.shares:
        was = current.share(share.name)
        old, new = before["per_share"].get(share.name, {}), after["per_share"].get(share.name, {})
        rows.append(
            (
                share.name,
                _pair(_owns(was.capacity if was else {}), _owns(share.capacity)),
                _pair(_sharing(was) if was else "-", _sharing(share)),
                *(_pair(a, b) for a, b in zip(_figures(old), _figures(new), strict=True)),
            )
        )
    return table(rows)


def _figures(data: Metrics) -> list[str]:
    if not data:
        return ["-"] * 5
    return [
        duration(data["total_wait_seconds"]["mean"]),
        duration(data["total_wait_seconds"]["p95"]),
        _hours(violation(data)),
        per_unit(data["utilization"], "{:.0%}"),
        f"{data['preemptions']:,}",
    ]


def _pair(before: str, after: str) -> str:
    return before if before == after else f"{before} -> {after}"


def _sharing(share: Share) -> str:
    if share.sharing is Sharing.LEND_AND_BORROW and share.borrow_limit != UNLIMITED_BORROW:
        return f"{share.sharing.value} {share.borrow_limit}%"
    return share.sharing.value


def _owns(capacity: Any) -> str:
    return ", ".join(f"{n} {u}" for u, n in sorted(capacity.items())) or "0"


def _hours(unit_seconds: float) -> str:
    return f"{unit_seconds / 3600:,.0f}"


def _change(before: float, after: float) -> str:
    if before == after:
        return "unchanged"
    if not before:
        return f"{duration(before)} -> {duration(after)}"
    return f"{duration(before)} -> {duration(after)} ({(after - before) / before:+.1%})"
