"""``airflow-quota simulate --config FILE --trace FILE``: replay a job trace under policies."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from airflow_quota_provider.cli.progress import ProgressBar
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.model import IdleAssignment, QueueConfig, VictimOrder
from airflow_quota_provider.exceptions import ConfigError, ScenarioError
from airflow_quota_provider.simulation.policies import Extensions, Policy
from airflow_quota_provider.simulation.replay import Replay, ReplaySettings, replay
from airflow_quota_provider.simulation.report import INSTALL, report_problem, write_report
from airflow_quota_provider.simulation.tables import comparison_text, replay_text
from airflow_quota_provider.simulation.traces import Trace, TraceFormat, read_trace


def number_type(minimum: float, *, strict: bool) -> Callable[[str], float]:
    sign = ">" if strict else ">="

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value > minimum if strict else value >= minimum) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a number {sign} {minimum:g}, got {text!r}")
        return value

    return parse


def _policies(text: str) -> list[Policy]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    allowed = ", ".join(p.value for p in Policy)
    unknown = [name for name in names if name not in {p.value for p in Policy}]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"must be policies separated by commas ({allowed}), got {text!r}"
        )
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"names a policy twice: {text!r}")
    return [Policy(name) for name in names]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "trace replay", "replay a recorded job trace under a quota config (--config and --trace)"
    )
    group.add_argument("--config", metavar="FILE", help="the quota config (YAML or JSON)")
    group.add_argument("--trace", metavar="FILE", help="the job trace (csv)")
    group.add_argument(
        "--trace-format",
        choices=[f.value for f in TraceFormat],
        help="csv: id,submit_seconds,share,priority,unit,count,duration_seconds "
        "[,checkpoint_interval_seconds,preemption_retries]; helios: a Helios jobs.csv as is",
    )
    group.add_argument(
        "--load",
        type=number_type(0, strict=True),
        help="divide every submit time by X (1.2 = 20%% more work per hour); default 1",
    )
    group.add_argument(
        "--policy",
        choices=[p.value for p in Policy],
        help="aws: the config as written; static: no lending or borrowing; "
        "pooled: one first-come-first-served pool, no guarantees",
    )
    group.add_argument(
        "--compare",
        type=_policies,
        metavar="P1,P2,...",
        help="replay under each policy and show them side by side (instead of --policy)",
    )
    group.add_argument(
        "--checkpoint-interval",
        type=number_type(0, strict=True),
        metavar="SECONDS",
        help="checkpoint interval of the jobs that have none in the trace",
    )
    group.add_argument(
        "--preemption-delay",
        type=number_type(0, strict=False),
        metavar="SECONDS",
        help="seconds a preempted job takes to stop; default 0",
    )
    group.add_argument(
        "--idle-assignment",
        choices=[i.value for i in IdleAssignment],
        help="extension for aws: FAIR hands idle capacity to the least-borrowing share first",
    )
    group.add_argument(
        "--min-runtime",
        type=number_type(0, strict=False),
        metavar="SECONDS",
        help="extension for aws: jobs younger than this are not reclaimed",
    )
    group.add_argument(
        "--victim-order",
        choices=[v.value for v in VictimOrder],
        help="extension for aws: least_work_lost preempts the job losing least work first",
    )
    group.add_argument(
        "--report",
        metavar="DIR",
        help="write report.md and PNG plots to this directory (created if needed); needs "
        f"matplotlib: {INSTALL}",
    )


_OPTIONS = (
    "config",
    "trace",
    "trace_format",
    "load",
    "policy",
    "compare",
    "checkpoint_interval",
    "preemption_delay",
    "idle_assignment",
    "min_runtime",
    "victim_order",
    "report",
)


def requested(args: argparse.Namespace) -> bool:
    """Whether any trace replay option was given."""
    return any(getattr(args, option) is not None for option in _OPTIONS)


def settings_list(args: argparse.Namespace) -> list[ReplaySettings]:
    """One replay per policy asked for; raises ``ValueError`` for flags that do not apply."""
    extensions = Extensions(
        IdleAssignment(args.idle_assignment) if args.idle_assignment else None,
        args.min_runtime,
        VictimOrder(args.victim_order) if args.victim_order else None,
    )
    policies = args.compare or [Policy(args.policy or Policy.AWS.value)]
    if extensions.chosen and Policy.AWS not in policies:
        raise ValueError(
            f"--idle-assignment, --min-runtime and --victim-order are extensions of the aws "
            f"policy; the policies replayed are {', '.join(p.value for p in policies)}"
        )
    return [
        ReplaySettings(
            policy,
            1.0 if args.load is None else args.load,
            args.checkpoint_interval,
            args.preemption_delay or 0.0,
            extensions if policy is Policy.AWS else Extensions(),
        )
        for policy in policies
    ]


def _misuse(args: argparse.Namespace) -> str | None:
    if args.file is not None:
        return f"a trace replay takes --config and --trace, not a scenario file ({args.file})"
    if not (args.config and args.trace):
        return "a trace replay needs both --config FILE and --trace FILE"
    if args.until is not None:
        return "--until applies to scenario files; a trace replay runs to its last job"
    if args.compare and args.policy:
        return "give either --policy or --compare, not both"
    return None


def _load(args: argparse.Namespace) -> tuple[QueueConfig, Trace]:
    config = load_config(args.config)
    trace_format = TraceFormat(args.trace_format or TraceFormat.CSV.value)
    return config, read_trace(args.trace, trace_format)


def run(args: argparse.Namespace) -> int:
    misuse = _misuse(args)
    if misuse:
        print(misuse, file=sys.stderr)
        return 2
    try:
        settings = settings_list(args)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    unwritable = report_problem(Path(args.report)) if args.report else None
    if unwritable is not None:  # known before the replay, which may take minutes
        print(f"airflow-quota simulate: error: argument --report: {unwritable}", file=sys.stderr)
        return 2
    try:
        config, trace = _load(args)
    except (ConfigError, ScenarioError) as error:
        where = error.source or ""
        for problem in error.problems:
            print(f"{where}: {problem}", file=sys.stderr)
        return 1
    replays = [_replay(config, trace, s, series=bool(args.report)) for s in settings]
    print(replays[0].summary(), file=sys.stderr)
    if args.report and not _report(Path(args.report), config, replays):
        return 1
    _print(replays, as_json=args.json)
    return 0


def _report(folder: Path, config: QueueConfig, replays: Sequence[Replay]) -> bool:
    """Write the report; whether it was written."""
    try:
        written = write_report(folder, config, replays)
    except OSError as error:  # e.g. the disk filled up, or the folder went away meanwhile
        print(f"error: writing the report to {folder}: {error}", file=sys.stderr)
        return False
    print(f"report written to {written}", file=sys.stderr)
    return True


def _replay(config: QueueConfig, trace: Trace, settings: ReplaySettings, *, series: bool) -> Replay:
    last_submit = max((job.submit for job in trace.jobs), default=0.0) / settings.load
    with ProgressBar(settings.describe(), last_submit) as bar:
        return replay(config, trace, settings, series=series, on_progress=bar.update)


def _print(replays: Sequence[Replay], *, as_json: bool) -> None:
    if as_json:
        data: dict[str, Any]
        if len(replays) == 1:
            data = replays[0].to_json()
        else:
            data = {"compare": {r.settings.policy.value: r.to_json() for r in replays}}
        print(json.dumps(data, indent=2))
    elif len(replays) == 1:
        print(replay_text(replays[0]))
    else:
        print(comparison_text(replays))
