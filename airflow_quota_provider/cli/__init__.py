"""The ``airflow-quota`` command: one sub-command per module of this package."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from airflow_quota_provider.cli import (
    demo,
    doctor,
    emulator,
    pool_manager,
    recommend,
    reconcile,
    simulate,
    status,
    sync,
    trace,
    usage,
    validate,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="airflow-quota",
        description="Share GPU capacity between teams through AWS Batch quota shares.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        validate,
        simulate,
        emulator,
        sync,
        trace,
        recommend,
        status,
        usage,
        pool_manager,
        reconcile,
        doctor,
        demo,
    ):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except BrokenPipeError:
        # the reader left early (`airflow-quota simulate | head`): not an error to report;
        # point stdout at /dev/null so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
