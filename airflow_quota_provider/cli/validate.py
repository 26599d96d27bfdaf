"""``airflow-quota validate FILE``: check a quota config and report every problem at once."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.exceptions import ConfigError


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "validate",
        help="check a quota config file and report every problem",
        description="Check a quota config (YAML or JSON) against the AWS Batch quota-share "
        "rules and print every problem at once, one per line as FILE: PATH: MESSAGE. "
        "Exits 0 when the config is valid, 1 when it is not.",
    )
    parser.add_argument("file", help="quota config file (YAML or JSON)")
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"valid": ..., "problems": [{"path": ..., "message": ...}]} instead',
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path: str = args.file
    try:
        config = load_config(path)
    except ConfigError as error:
        if args.json:
            _print_json(False, error)
        else:
            for problem in error.problems:
                print(f"{path}: {problem}", file=sys.stderr)
        return 1
    if args.json:
        _print_json(True, None)
    else:
        print(f"{path}: OK — {summary(config)}")
    return 0


def summary(config: QueueConfig) -> str:
    """``4 shares, capacity ml.p4d.24xlarge: 16, ml.g5.12xlarge: 32``."""
    count = len(config.shares)
    shares = f"{count} share" if count == 1 else f"{count} shares"
    capacity = ", ".join(f"{unit}: {n}" for unit, n in config.capacity.items())
    return f"{shares}, capacity {capacity}"


def _print_json(valid: bool, error: ConfigError | None) -> None:
    problems = [] if error is None else error.problems
    listed = [{"path": p.path, "message": p.message} for p in problems]
    print(json.dumps({"valid": valid, "problems": listed}, indent=2))
