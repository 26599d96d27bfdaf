"""``airflow-quota plan FILE`` and ``airflow-quota apply FILE``: config as code, for AWS Batch
or, for a config with ``backend: airflow_pools``, for the config's Airflow pools.

Exit codes. plan: 0 nothing to change, 2 changes to make, 1 an error (an
invalid file, a failed AWS or Airflow call, or a blocker: a difference AWS
cannot change in place, a pool apply must not touch now). apply: 0 done (or
nothing to do), 1 an error or a refusal; a refused apply (destructive changes
without ``--allow-destructive``, or blockers) changes nothing.

AWS is reached as ``--aws-conn-id`` or the AWS environment says; Airflow's REST
API as ``--conn-id``, or ``--api-url`` and ``--username`` with the password in
``AIRFLOW_QUOTA_API_PASSWORD``, as for ``airflow-quota pool-manager``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.airflow_pools import DEFAULT_API_CONN_ID
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.aws_batch.errors import AwsCallFailed
from airflow_quota_provider.cli.airflow_api import (
    add_airflow_api_arguments,
    airflow_api,
)
from airflow_quota_provider.cli.connection import AwsClientError, add_aws_arguments, aws_client
from airflow_quota_provider.exceptions import ConfigError
from airflow_quota_provider.sync.apply import apply_plan
from airflow_quota_provider.sync.aws_state import read_state
from airflow_quota_provider.sync.changes import Change, Plan
from airflow_quota_provider.sync.errors import ApplyRefused
from airflow_quota_provider.sync.plan import plan
from airflow_quota_provider.sync.render import BATCH, POOLS, Wording, change_line, plan_lines
from airflow_quota_provider.sync.target import SyncTarget, load_target

if TYPE_CHECKING:
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, GatewayError

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

_FILE_HELP = (
    "quota config file (YAML or JSON); for AWS Batch optionally with service_environment, "
    "scheduling_policy and job_queue_priority; with backend: airflow_pools, its pools"
)
_AWS_OPTIONS = ("aws_conn_id", "region", "endpoint_url")
_AIRFLOW_OPTIONS = ("conn_id", "api_url", "username")


def add_parser(commands: Any) -> None:
    plan_parser: argparse.ArgumentParser = commands.add_parser(
        "plan",
        help="show what apply would change in AWS Batch or in Airflow's pools",
        description="Compare a quota config with what AWS Batch has (or, with backend: "
        "airflow_pools, what Airflow's pools are) and print the changes apply would make. "
        "Exits 0 when there is nothing to change, 2 when there are changes, 1 on an error.",
    )
    _common(plan_parser)
    plan_parser.set_defaults(handler=run_plan)
    apply_parser: argparse.ArgumentParser = commands.add_parser(
        "apply",
        help="make AWS Batch or Airflow's pools match a quota config",
        description="Create or update the service environment, scheduling policy, job queue "
        "and quota shares of a quota config; with backend: airflow_pools, its Airflow pools. "
        "Destructive changes (deletions, lowering capacity or slots below what runs now, "
        "moving the queue off its scheduling policy) are refused, changing nothing, unless "
        "--allow-destructive. Exits 0 when done, 1 otherwise.",
    )
    _common(apply_parser)
    apply_parser.add_argument(
        "--allow-destructive", action="store_true", help="also make destructive changes"
    )
    apply_parser.set_defaults(handler=run_apply)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help=_FILE_HELP)
    add_aws_arguments(
        parser.add_argument_group("AWS Batch", "for a config with backend: aws_batch (default)")
    )
    airflow = parser.add_argument_group("Airflow", "for a config with backend: airflow_pools")
    add_airflow_api_arguments(airflow, database=False)
    # unset unless given, to tell a misplaced --conn-id; airflow_api_default is used then
    parser.set_defaults(conn_id=None)


def run_plan(args: argparse.Namespace) -> int:
    target = _target(args)
    if target is None:
        return EXIT_ERROR
    if isinstance(target, Fleet):
        return _pools(args, target, apply=False)
    found = _plan(args, target)
    if found is None:
        return EXIT_ERROR
    return _planned(found[0], target.job_queue, BATCH)


def run_apply(args: argparse.Namespace) -> int:
    target = _target(args)
    if target is None:
        return EXIT_ERROR
    if isinstance(target, Fleet):
        return _pools(args, target, apply=True)
    found = _plan(args, target)
    if found is None:
        return EXIT_ERROR
    result, batch = found
    print("\n".join(plan_lines(result, target.job_queue)))
    if result.empty:
        return EXIT_OK
    try:
        apply_plan(
            batch,
            result,
            allow_destructive=args.allow_destructive,
            on_done=_done,
            on_unrecorded=_unrecorded,
        )
    except ApplyRefused as refused:
        _refusal(result, refused, BATCH)
        return EXIT_ERROR
    except AwsCallFailed as error:
        print(f"error: {error}; the changes marked done above were made", file=sys.stderr)
        return EXIT_ERROR
    print(f"Apply complete: {len(result.changes)} changes made.")
    return EXIT_OK


def _target(args: argparse.Namespace) -> SyncTarget | Fleet | None:
    """What the file asks for, or ``None`` after printing every problem by path."""
    path: str = args.file
    try:
        target = load_target(path)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return None
    pools = isinstance(target, Fleet)
    misplaced = [
        "--" + name.replace("_", "-")
        for name in (_AWS_OPTIONS if pools else _AIRFLOW_OPTIONS)
        if getattr(args, name) is not None
    ]
    if misplaced:
        backend = "aws_batch" if pools else "airflow_pools"
        other = "airflow_pools" if pools else "aws_batch"
        print(
            f"error: {', '.join(misplaced)}: for a config with backend {backend}; "
            f"{path} has backend {other}",
            file=sys.stderr,
        )
        return None
    return target


def _plan(args: argparse.Namespace, target: SyncTarget) -> tuple[Plan, Any] | None:
    """The target's plan and the Batch client, or ``None`` after printing why not."""
    try:
        batch = batch_client(args)
        state = read_state(batch, target)
    except AwsCallFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    return plan(target, state), batch


def _planned(result: Plan, name: str, wording: Wording) -> int:
    """Print a plan; plan's exit code for it."""
    print("\n".join(plan_lines(result, name, wording)))
    if result.blockers:
        return EXIT_ERROR
    return EXIT_OK if result.empty else EXIT_CHANGES


def _pools(args: argparse.Namespace, fleet: Fleet, *, apply: bool) -> int:
    """plan or apply for a pools fleet, through Airflow's REST API."""
    # imported here: the REST client takes a second to load, and Batch needs none of it
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, GatewayError
    from airflow_quota_provider.sync.airflow_state import read_pools_state
    from airflow_quota_provider.sync.pool_plan import plan_pools

    try:
        url, credentials = airflow_api(
            args.conn_id or DEFAULT_API_CONN_ID, args.api_url, args.username
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    gateway = AirflowGateway(url, credentials)
    try:
        result = plan_pools(fleet, read_pools_state(gateway, fleet), time.time())
    except GatewayError as error:
        print(f"error: {_airflow_error(error)}; nothing was changed", file=sys.stderr)
        return EXIT_ERROR
    name = fleet.config.job_queue
    if not apply:
        return _planned(result, name, POOLS)
    print("\n".join(plan_lines(result, name, POOLS)))
    if result.empty:
        return EXIT_OK
    return apply_pools(gateway, result, allow_destructive=args.allow_destructive)


def apply_pools(gateway: AirflowGateway, result: Plan, *, allow_destructive: bool) -> int:
    """Apply a pools plan, printing each change done, a refusal or the failed call; apply's
    exit code."""
    from airflow_quota_provider.airflow_pools.gateway import GatewayError
    from airflow_quota_provider.sync.pool_apply import apply_pool_plan

    done: list[Change] = []

    def on_done(change: Change) -> None:
        done.append(change)
        _done(change)

    try:
        apply_pool_plan(gateway, result, allow_destructive=allow_destructive, on_done=on_done)
    except ApplyRefused as refused:
        _refusal(result, refused, POOLS)
        return EXIT_ERROR
    except GatewayError as error:
        made = "the changes marked done above were made" if done else "nothing was changed"
        print(f"error: {_airflow_error(error)}; {made}", file=sys.stderr)
        return EXIT_ERROR
    print(f"Apply complete: {len(result.changes)} changes made.")
    return EXIT_OK


def _airflow_error(error: GatewayError) -> str:
    """The gateway's message, and what to check when Airflow refused the user."""
    if error.status == 401:
        check = "--username with $AIRFLOW_QUOTA_API_PASSWORD, or the connection's login"
        return f"{error} (check the user and its password: {check} and password)"
    if error.status == 403:
        roles = "reading needs Airflow's Viewer role, changing pools its Op role or above"
        return f"{error} (the user may not do this: {roles})"
    return str(error)


def batch_client(args: argparse.Namespace) -> Any:
    """A Batch client from the Airflow connection if one is named, else the AWS environment."""
    try:
        return aws_client("batch", args)
    except AwsClientError as error:
        raise AwsCallFailed("creating the Batch client", error.kind, error.detail) from error


def _done(change: Change) -> None:
    print(f"done: {change_line(change)}")


def _unrecorded(change: Change, failed: AwsCallFailed) -> None:
    print(
        f"warning: {change.kind} {change.name} was {change.action}d but not recorded ({failed}): "
        "its usage history before now will read as not known",
        file=sys.stderr,
    )


def _refusal(result: Plan, refused: ApplyRefused, wording: Wording) -> None:
    if result.blockers:
        why = wording.blocked
        listed = list(refused.reasons)
    else:
        why = "these changes are destructive; run again with --allow-destructive to make them"
        listed = [change_line(change) for change in result.destructive]
    print(f"error: apply refused, nothing was changed: {why}:", file=sys.stderr)
    for line in listed:
        print(f"  {line}", file=sys.stderr)
