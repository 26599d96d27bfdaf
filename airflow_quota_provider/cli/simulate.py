"""``airflow-quota simulate [FILE]``: replay a scenario through the scheduling core.

With ``--config`` and ``--trace`` it replays a job trace instead (see
:mod:`airflow_quota_provider.cli.replay`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# the module itself, not through the package: the package's __init__ imports this module
import airflow_quota_provider.cli.replay as replay
from airflow_quota_provider.config_file import load_mapping
from airflow_quota_provider.exceptions import ConfigError, ScenarioError
from airflow_quota_provider.simulation.output import timeline_text, to_json
from airflow_quota_provider.simulation.scenario import EXAMPLE_SCENARIO, parse_scenario
from airflow_quota_provider.simulation.simulator import Simulator


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "simulate",
        help="replay a scenario (config, jobs, events) in virtual time",
        description="Replay a scenario through the quota engine in virtual time and print "
        "what happened: a readable timeline, or with --json every job's attempts and the metrics. "
        "With --config and --trace, replay a recorded job trace under quota policies instead.",
    )
    parser.add_argument(
        "file",
        nargs="?",
        help="scenario file (YAML or JSON): a quota config plus jobs; "
        "without it, the embedded example scenario",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--until", type=float, metavar="SECONDS", help="stop the replay at this virtual time"
    )
    replay.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if replay.requested(args):
        return replay.run(args)
    path = args.file or str(EXAMPLE_SCENARIO)
    if args.until is not None and args.until < 0:
        print(f"--until must be >= 0 seconds, got {args.until:g}", file=sys.stderr)
        return 2
    try:
        scenario = parse_scenario(load_mapping(path), source=path)
    except (ConfigError, ScenarioError) as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return 1
    result = Simulator(scenario, record_timeline=not args.json).run(until=args.until)
    if args.json:
        print(json.dumps(to_json(result), indent=2))
    else:
        print(timeline_text(result))
    return 0
