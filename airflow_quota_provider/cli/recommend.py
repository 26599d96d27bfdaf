"""``airflow-quota recommend``: propose share capacities for a trace, replay and write them."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

import yaml

from airflow_quota_provider.cli.replay import number_type
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.config import config_to_dict, parse_config
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.exceptions import ConfigError, ScenarioError
from airflow_quota_provider.simulation.policies import Policy
from airflow_quota_provider.simulation.recommend import candidates
from airflow_quota_provider.simulation.replay import Replay, ReplaySettings, replay
from airflow_quota_provider.simulation.tables import HEADER, cells, table
from airflow_quota_provider.simulation.traces import TraceFormat, read_trace

_CAPACITY = re.compile(r"([A-Za-z0-9._-]{1,64})=(\d+)")


def _capacity(text: str) -> tuple[str, int]:
    match = _CAPACITY.fullmatch(text.strip())
    if match is None or int(match.group(2)) < 1:
        raise argparse.ArgumentTypeError(
            f"must be UNIT=COUNT with a count >= 1, e.g. gpu=856, got {text!r}"
        )
    return match.group(1), int(match.group(2))


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "recommend",
        help="propose share capacities for a job trace",
        description="Propose share capacities for a job trace: the queue's capacity split in "
        "proportion to the work each share submits (and, with --config, half-way between the "
        "current split and that), every share lending and borrowing without limit. Each "
        "candidate and the current config replay the trace (aws policy); the one that refuses "
        "fewest jobs, then has the least mean wait, is written as a config file.",
    )
    parser.add_argument("--trace", required=True, metavar="FILE", help="the job trace (csv)")
    parser.add_argument(
        "--trace-format", choices=[f.value for f in TraceFormat], default=TraceFormat.CSV.value
    )
    parser.add_argument(
        "--capacity",
        type=_capacity,
        action="append",
        required=True,
        metavar="UNIT=COUNT",
        help="the queue's capacity of a unit, e.g. gpu=856; repeat for more units",
    )
    parser.add_argument("--shares", help="share names, comma-separated; default: the trace's")
    parser.add_argument("--config", metavar="FILE", help="the current config, to compare with")
    parser.add_argument("--job-queue", help="the proposal's job queue name")
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
    capacity = dict(args.capacity)
    if len(capacity) != len(args.capacity):
        print("--capacity names a unit twice", file=sys.stderr)
        return 2
    try:
        trace = read_trace(args.trace, TraceFormat(args.trace_format))
        current = load_config(args.config) if args.config else None
        shares = [s.strip() for s in args.shares.split(",")] if args.shares else []
        job_queue = args.job_queue or (current.job_queue if current else "recommended")
        # validated like a file, so a proposal is always a config AWS would accept
        found = candidates(job_queue, capacity, trace.jobs, shares, current)
        proposals = {name: parse_config(config_to_dict(c)) for name, c in found.items()}
    except (ConfigError, ScenarioError) as error:
        where = f"{error.source}: " if error.source else "the proposal: "
        for problem in error.problems:
            print(f"{where}{problem}", file=sys.stderr)
        return 1
    settings = ReplaySettings(
        Policy.AWS, args.load, args.checkpoint_interval, args.preemption_delay
    )
    runs = [(name, config, replay(config, trace, settings)) for name, config in proposals.items()]
    print(runs[0][2].summary(), file=sys.stderr)
    best = min(runs, key=_rank)
    print(_comparison(runs))
    with open(args.output, "w", encoding="utf-8") as file:
        yaml.safe_dump(config_to_dict(best[1]), file, sort_keys=False)
    print(f"\nleast waiting: {best[0]}; written to {args.output}")
    return 0


def _rank(run: tuple[str, QueueConfig, Replay]) -> tuple[int, float, float]:
    """Fewest refused jobs first (a refused job waits for nothing), then least mean
    wait, then least guarantee violation."""
    metrics = run[2].metrics()
    violation = sum(metrics["guarantee_violation_unit_seconds"].values())
    return metrics["jobs"]["rejected"], float(metrics["wait_seconds"]["mean"]), float(violation)


def _comparison(runs: list[tuple[str, QueueConfig, Replay]]) -> str:
    metrics = [(name, config, done.metrics()) for name, config, done in runs]
    overall: list[tuple[str, ...]] = [("config (aws)", *HEADER)]
    overall += [(name, *cells(m)) for name, _, m in metrics]
    shares: list[tuple[str, ...]] = [
        ("share", *(f"{name} {what}" for name, _, _ in metrics for what in ("owns", "wait min")))
    ]
    for share in metrics[0][1].shares:
        row = [share.name]
        for _, config, m in metrics:
            owned = config.share(share.name)
            row.append(_owns(owned.capacity if owned else {}))
            per_share = m["per_share"].get(share.name)
            row.append(f"{per_share['wait_seconds']['mean'] / 60:,.1f}" if per_share else "-")
        shares.append(tuple(row))
    return f"{table(overall)}\n\n{table(shares)}"


def _owns(capacity: Any) -> str:
    return ", ".join(f"{n} {u}" for u, n in sorted(capacity.items())) or "0"
