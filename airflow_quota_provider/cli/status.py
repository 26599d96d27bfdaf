"""``airflow-quota status``, ``explain JOB`` and ``events``: the GPU Quotas view in a terminal.

They read through the same backend as the view (AWS Batch). Connection:
``--aws-conn-id`` (an Airflow connection) or the usual AWS environment
(``AWS_ENDPOINT_URL``, region, credentials), with ``--region`` and
``--endpoint-url`` overrides, as ``plan`` and ``apply`` take them.
For a pools fleet (``--config``) they read the pool manager's ``--database`` and never
create it: a database the manager never made is an error naming it.
Exit codes: 0 done, 1 an unknown queue or job, an ambiguous job name, a failed AWS call,
or a pools fleet's database that does not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.aws_batch.errors import AwsCallFailed
from airflow_quota_provider.cli.airflow_api import add_airflow_api_arguments, airflow_api
from airflow_quota_provider.cli.connection import add_aws_arguments
from airflow_quota_provider.exceptions import ViewError

if TYPE_CHECKING:
    from airflow_quota_provider.view.backend import QuotaBackend
    from airflow_quota_provider.view.text import Style

EXIT_OK, EXIT_ERROR = 0, 1
Shown = tuple[Any, list[str]]


def add_parser(commands: Any) -> None:
    status = commands.add_parser(
        "status",
        help="show each share's capacity, borrowing, lending, waiting and running jobs",
        description="Per job queue and share: what it owns, uses, borrows, lends and leaves "
        "idle per instance type; its waiting jobs in dispatch order with the reason; its "
        "running jobs, which borrow, and which a reclaim would preempt next.",
    )
    status.add_argument("--job-queue", help="only this job queue (name or ARN); default all")
    _common(status)
    status.set_defaults(handler=run_status)
    explain = commands.add_parser(
        "explain",
        help="why a job waits (with the numbers) or why it was preempted",
        description="Explain one service job: why it waits, what it holds, whether a "
        "reclaim would take it next, and each time it was preempted. A name that several "
        "jobs have is refused with their ids.",
    )
    explain.add_argument(
        "job",
        metavar="JOB",
        nargs="+",
        help="the service job's id or ARN, or its name when no other job of --job-queue "
        "(default: of any job queue) has it; for a pools fleet, the task instance: "
        "DAG_ID TASK_ID RUN_ID [MAP_INDEX] (or DAG_ID/RUN_ID/TASK_ID[MAP_INDEX])",
    )
    explain.add_argument(
        "--job-queue", help="look for JOB by name only in this job queue (name or ARN)"
    )
    _common(explain)
    explain.set_defaults(handler=run_explain)
    events = commands.add_parser(
        "events",
        help="recent preemptions: who, by whom, why, work lost",
        description="Preempted attempts of the last hours, newest first.",
    )
    events.add_argument("--job-queue", help="only this job queue (name or ARN); default all")
    _common(events)
    events.set_defaults(handler=run_events)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_aws_arguments(parser)
    pools = parser.add_argument_group(
        "a pools fleet", "with --config naming a config whose backend is airflow_pools"
    )
    pools.add_argument(
        "--config", help="a quota config with backend: airflow_pools (default: AWS Batch)"
    )
    add_airflow_api_arguments(pools)


def run_status(args: argparse.Namespace) -> int:
    from airflow_quota_provider.view.text import status_lines

    def show(backend: QuotaBackend) -> Shown:
        views = [backend.queue(name) for name in _queue_names(backend, args.job_queue)]
        lines = [line for view in views for line in [*status_lines(view, _style()), ""]]
        return [asdict(v) for v in views], lines[:-1] or ["no SageMaker training job queues"]

    return _run(args, show)


def run_explain(args: argparse.Namespace) -> int:
    from airflow_quota_provider.view.text import explanation_lines

    def show(backend: QuotaBackend) -> Shown:
        found = backend.explain(_job_named(args.job), args.job_queue)
        return asdict(found), explanation_lines(found, _style())

    return _run(args, show)


def run_events(args: argparse.Namespace) -> int:
    from airflow_quota_provider.view.text import event_lines

    def show(backend: QuotaBackend) -> Shown:
        views = [backend.queue(name) for name in _queue_names(backend, args.job_queue)]
        events = sorted((e for v in views for e in v.events), key=lambda e: -e.stopped_at)
        return [asdict(e) for e in events], event_lines(events, _style())

    return _run(args, show)


def _job_named(words: list[str]) -> str:
    """One job id: a service job's, or a task instance's from ``DAG TASK RUN [MAP_INDEX]``."""
    if len(words) == 1:
        return words[0]
    if len(words) in (3, 4):
        dag_id, task_id, run_id = words[:3]
        mapped = f"[{words[3]}]" if len(words) == 4 and words[3] != "-1" else ""
        return f"{dag_id}/{run_id}/{task_id}{mapped}"
    raise ViewError(
        f"name one job: a service job's id, ARN or name, or a task instance as "
        f"DAG_ID TASK_ID RUN_ID [MAP_INDEX]; got {len(words)} words"
    )


def _run(args: argparse.Namespace, show: Callable[[QuotaBackend], Shown]) -> int:
    try:
        data, lines = show(_backend(args))
    except (ViewError, AwsCallFailed, _gateway_error()) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    print(json.dumps(data, indent=2) if args.json else "\n".join(lines))
    return EXIT_OK


def _queue_names(backend: QuotaBackend, wanted: str | None) -> list[str]:
    return [wanted] if wanted else [queue.name for queue in backend.queues()]


def _backend(args: argparse.Namespace) -> QuotaBackend:
    if args.config:
        return _pools_backend(args)
    # Airflow logs its progress (connections, credentials) to stdout at INFO, which would
    # mix with the table or the JSON; a level the user set is kept.
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    # Imported here: loading Airflow takes seconds, and only these commands need it.
    from airflow_quota_provider.hooks.batch import BatchQuotaHook
    from airflow_quota_provider.view.backend import BatchBackend

    # botocore reads AWS_DEFAULT_REGION by itself but not AWS_REGION, which other SDKs use.
    region = args.region or os.environ.get("AWS_REGION") or None
    hook = BatchQuotaHook(
        aws_conn_id=args.aws_conn_id, region_name=region, endpoint_url=args.endpoint_url
    )
    return BatchBackend(hook)


def _style() -> Style:
    from airflow_quota_provider.view.text import Style

    return Style(colour=sys.stdout.isatty() and "NO_COLOR" not in os.environ)


def _pools_backend(args: argparse.Namespace) -> QuotaBackend:
    """The backend of the pools fleet of ``--config``; ``ViewError`` saying what is wrong."""
    from airflow_quota_provider.airflow_pools.database import MissingDatabase
    from airflow_quota_provider.airflow_pools.fleet import Fleet
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
    from airflow_quota_provider.airflow_pools.store import Store
    from airflow_quota_provider.config_file import load_config
    from airflow_quota_provider.core.model import Backend
    from airflow_quota_provider.exceptions import ConfigError
    from airflow_quota_provider.view.pools_source import PoolsBackend

    try:
        config = load_config(args.config)
    except ConfigError as error:
        raise ViewError("; ".join(f"{args.config}: {p}" for p in error.problems)) from None
    if config.backend is not Backend.AIRFLOW_POOLS:
        raise ViewError(
            f"{args.config}: backend is {config.backend.value}; --config is for a pools fleet "
            "(backend: airflow_pools); without it these commands read AWS Batch"
        )
    try:
        url, credentials = airflow_api(args.conn_id, args.api_url, args.username)
        store = Store(args.database, create=False)
    except MissingDatabase as error:
        raise ViewError(f"{error}; pass --database, the one the pool manager runs with") from None
    except ValueError as error:
        raise ViewError(str(error)) from None
    return PoolsBackend(
        Fleet.of(config), AirflowGateway(url, credentials), store, config_path=args.config
    )


def _gateway_error() -> type[Exception]:
    from airflow_quota_provider.airflow_pools.gateway import GatewayError

    return GatewayError
