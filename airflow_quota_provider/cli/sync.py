"""``airflow-quota plan FILE`` and ``airflow-quota apply FILE``: config as code for AWS Batch.

Exit codes. plan: 0 nothing to change, 2 changes to make, 1 an error (an
invalid file, a failed AWS call, or a difference AWS cannot change in place).
apply: 0 done (or nothing to do), 1 an error or a refusal; a refused apply
(destructive changes without ``--allow-destructive``, or blockers) changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from airflow_quota_provider.cli.connection import add_aws_arguments
from airflow_quota_provider.exceptions import ConfigError
from airflow_quota_provider.sync.apply import apply_plan
from airflow_quota_provider.sync.aws_state import read_state
from airflow_quota_provider.sync.changes import Change, Plan
from airflow_quota_provider.sync.errors import ApplyRefused, AwsCallFailed
from airflow_quota_provider.sync.plan import plan
from airflow_quota_provider.sync.render import change_line, plan_lines
from airflow_quota_provider.sync.target import SyncTarget, load_target

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

_FILE_HELP = (
    "quota config file (YAML or JSON), optionally with service_environment, "
    "scheduling_policy and job_queue_priority"
)


def add_parser(commands: Any) -> None:
    plan_parser: argparse.ArgumentParser = commands.add_parser(
        "plan",
        help="show what apply would change in AWS Batch",
        description="Compare a quota config with what AWS Batch has and print the changes "
        "apply would make. Exits 0 when there is nothing to change, 2 when there are "
        "changes, 1 on an error.",
    )
    _common(plan_parser)
    plan_parser.set_defaults(handler=run_plan)
    apply_parser: argparse.ArgumentParser = commands.add_parser(
        "apply",
        help="make AWS Batch match a quota config",
        description="Create or update the service environment, scheduling policy, job queue "
        "and quota shares of a quota config. Destructive changes (deletions, lowering "
        "capacity below what runs now, moving the queue off its scheduling policy) are "
        "refused, changing nothing, unless --allow-destructive. Exits 0 when done, 1 otherwise.",
    )
    _common(apply_parser)
    apply_parser.add_argument(
        "--allow-destructive", action="store_true", help="also make destructive changes"
    )
    apply_parser.set_defaults(handler=run_apply)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help=_FILE_HELP)
    add_aws_arguments(parser)


def run_plan(args: argparse.Namespace) -> int:
    found = _plan(args)
    if found is None:
        return EXIT_ERROR
    target, result, _ = found
    print("\n".join(plan_lines(result, target.job_queue)))
    if result.blockers:
        return EXIT_ERROR
    return EXIT_OK if result.empty else EXIT_CHANGES


def run_apply(args: argparse.Namespace) -> int:
    found = _plan(args)
    if found is None:
        return EXIT_ERROR
    target, result, batch = found
    print("\n".join(plan_lines(result, target.job_queue)))
    if result.empty:
        return EXIT_OK
    try:
        apply_plan(batch, result, allow_destructive=args.allow_destructive, on_done=_done)
    except ApplyRefused as refused:
        _refusal(result, refused)
        return EXIT_ERROR
    except AwsCallFailed as error:
        print(f"error: {error}; the changes marked done above were made", file=sys.stderr)
        return EXIT_ERROR
    print(f"Apply complete: {len(result.changes)} changes made.")
    return EXIT_OK


def _plan(args: argparse.Namespace) -> tuple[SyncTarget, Plan, Any] | None:
    """The target, its plan and the Batch client, or ``None`` after printing why not."""
    path: str = args.file
    try:
        target = load_target(path)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return None
    try:
        batch = batch_client(args)
        state = read_state(batch, target)
    except AwsCallFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    return target, plan(target, state), batch


def batch_client(args: argparse.Namespace) -> Any:
    """A Batch client from the Airflow connection if one is named, else the AWS environment."""
    if args.aws_conn_id:
        return _client_from_connection(args.aws_conn_id, args.region, args.endpoint_url)
    import boto3  # type: ignore[import-untyped]  # no stubs installed; botocore has them
    from botocore.exceptions import BotoCoreError

    # botocore reads AWS_DEFAULT_REGION by itself but not AWS_REGION, which other SDKs use.
    region = args.region or os.environ.get("AWS_REGION") or None
    try:
        return boto3.client("batch", region_name=region, endpoint_url=args.endpoint_url)
    except BotoCoreError as error:
        raise AwsCallFailed(
            "creating the Batch client", type(error).__name__, str(error)
        ) from error


def _client_from_connection(conn_id: str, region: str | None, endpoint_url: str | None) -> Any:
    # Imported here: loading Airflow takes seconds, and only this branch needs it.
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="batch", region_name=region)
    if endpoint_url is None:
        return hook.conn
    session = hook.get_session(region_name=hook.region_name)
    return session.client(
        "batch", endpoint_url=endpoint_url, config=hook.config, verify=hook.verify
    )


def _done(change: Change) -> None:
    print(f"done: {change_line(change)}")


def _refusal(result: Plan, refused: ApplyRefused) -> None:
    if result.blockers:
        why = "AWS cannot make these changes in place"
        listed = list(refused.reasons)
    else:
        why = "these changes are destructive; run again with --allow-destructive to make them"
        listed = [change_line(change) for change in result.destructive]
    print(f"error: apply refused, nothing was changed: {why}:", file=sys.stderr)
    for line in listed:
        print(f"  {line}", file=sys.stderr)
