"""``airflow-quota pool-manager --config FILE``: run the pool manager beside the scheduler.

It reaches Airflow through its public REST API as an Airflow user: the
connection ``--conn-id`` (default ``airflow_api_default``; host, port, login and
password, e.g. ``AIRFLOW_CONN_AIRFLOW_API_DEFAULT=http://manager:secret@api:8080``),
or ``--api-url`` and ``--username`` with the password in the environment
variable ``AIRFLOW_QUOTA_API_PASSWORD`` (never on the command line, where
``ps`` shows it). Exit codes: 0 stopped by a signal, 1 bad config or
connection, 2 usage error.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from airflow_quota_provider import metrics
from airflow_quota_provider.cli.airflow_api import add_airflow_api_arguments, airflow_api
from airflow_quota_provider.cli.connection import AwsClientError, add_aws_arguments, aws_client
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.exceptions import ConfigError

if TYPE_CHECKING:
    from airflow_quota_provider.pool_manager.manager import PoolManager


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "pool-manager",
        help="run quota shares for any Airflow task through Airflow pools",
        description="Keep the Airflow pools of a quota config in line with the quota rules: "
        "each share's pool opens exactly the slots its waiting tasks may take now, idle "
        "capacity is lent, and borrowers or lower-priority tasks are preempted by clearing "
        "them. Runs until stopped (SIGINT or SIGTERM).",
    )
    parser.add_argument("--config", required=True, help="the quota config (YAML or JSON)")
    parser.add_argument(
        "--interval", type=_positive, default=5.0, help="seconds between cycles (default 5)"
    )
    add_airflow_api_arguments(parser)
    parser.add_argument(
        "--once", action="store_true", help="run one cycle, print what it decided, and exit"
    )
    parser.add_argument(
        "--lease",
        type=_positive,
        help="seconds a manager's lead lasts unless renewed (default 1.5 intervals, at least 3): "
        "several managers of one fleet on one PostgreSQL database take over from each other "
        "within about 1.25 leases",
    )
    sagemaker = parser.add_argument_group(
        "SageMaker",
        "for fleets whose tasks run SageMaker training jobs: a preempted task holds its "
        "slots until its training job has stopped",
    )
    sagemaker.add_argument(
        "--watch-sagemaker",
        action="store_true",
        help="look up each victim's training job (by the name its try gives it) and keep its "
        "slots held while it is InProgress or Stopping",
    )
    sagemaker.add_argument(
        "--orphan-grace",
        type=_positive_or_zero,
        default=300.0,
        help="with --watch-sagemaker, also stop our training jobs whose task no longer "
        "watches them (failed, cleared, deleted, on a later try) once that has lasted this "
        "many seconds (default 300); checked every minute",
    )
    add_aws_arguments(sagemaker)
    parser.set_defaults(handler=run)


def _external_work(args: argparse.Namespace) -> Any:
    """The watcher of victims' SageMaker training jobs, if asked for.

    :raises ValueError: AWS options without ``--watch-sagemaker``, or no client can be made.
    """
    if not args.watch_sagemaker:
        if args.aws_conn_id or args.region or args.endpoint_url:
            raise ValueError(
                "--aws-conn-id, --region and --endpoint-url are for --watch-sagemaker, "
                "which is not given"
            )
        return None
    from airflow_quota_provider.pool_manager.external import SageMakerTrainingJobs

    try:
        return SageMakerTrainingJobs(aws_client("sagemaker", args))
    except AwsClientError as error:
        raise ValueError(f"the SageMaker client: {error}") from error


def _positive_or_zero(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{args.config}: {problem}", file=sys.stderr)
        return 1
    if config.backend is not Backend.AIRFLOW_POOLS:
        print(
            f"{args.config}: backend: the pool manager runs a config with backend: "
            f"{Backend.AIRFLOW_POOLS.value}; this one's is {config.backend.value}",
            file=sys.stderr,
        )
        return 1
    try:
        url, credentials = airflow_api(args.conn_id, args.api_url, args.username)
        external = _external_work(args)
    except ValueError as error:
        print(f"airflow-quota pool-manager: {error}", file=sys.stderr)
        return 1
    # imported here: the REST client and SQLAlchemy take a second to load
    from airflow_quota_provider.pool_manager.fleet import Fleet
    from airflow_quota_provider.pool_manager.gateway import AirflowGateway
    from airflow_quota_provider.pool_manager.lease import Lease
    from airflow_quota_provider.pool_manager.manager import PoolManager
    from airflow_quota_provider.pool_manager.store import Store

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    metrics.start()
    try:
        store = Store(args.database)
    except ValueError as error:
        print(f"airflow-quota pool-manager: --database: {error}", file=sys.stderr)
        return 1
    lease = Lease(store.engine, config.job_queue, args.lease or max(3.0, 1.5 * args.interval))
    gateway = AirflowGateway(url, credentials, write_timeout=lease.write_timeout)
    reconciler = None
    if external is not None:
        from airflow_quota_provider.reconciler.jobs import TrainingJobs
        from airflow_quota_provider.reconciler.reconciler import Reconciler

        jobs = TrainingJobs(external.client)
        reconciler = Reconciler([jobs], gateway, config.job_queue, args.orphan_grace)
    manager = PoolManager(
        Fleet.of(config),
        gateway,
        store,
        external=external,
        lease=lease,
        reconciler=reconciler,
    )
    only_one = store.engine.dialect.name == "sqlite"
    if (only_one or args.once) and not lease.wait_to_lead():
        holder = lease.current()
        who = f"{holder.holder} (epoch {holder.epoch})" if holder else "another manager"
        why = (
            "a SQLite database allows one manager; run several on PostgreSQL"
            if only_one
            else "--once acts only when no other manager leads"
        )
        print(
            f"airflow-quota pool-manager: {who} leads fleet {config.job_queue} on "
            f"{store.engine.url.render_as_string(hide_password=True)}; {why}",
            file=sys.stderr,
        )
        return 1
    lease.start()
    try:
        return _serve(manager, args)
    finally:
        lease.stop()


def _serve(manager: PoolManager, args: argparse.Namespace) -> int:
    if args.once:
        report = manager.cycle()
        for start in report.plan.start:
            print(f"start {start.key} in {start.pool} ({start.slots} slots)")
        for stop in report.plan.stop:
            print(f"preempt {stop.key}: {stop.note}")
        for key, wait in report.plan.waiting.items():
            print(f"wait {key}: {wait.code.value}: {wait.message}")
        return 0
    stopping = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.append(True))
    manager.run(args.interval, should_stop=lambda: bool(stopping))
    return 0
