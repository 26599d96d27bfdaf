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
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_quota_provider import metrics
from airflow_quota_provider.airflow_pools.rest import GatewayError
from airflow_quota_provider.cli.airflow_api import add_airflow_api_arguments, airflow_api
from airflow_quota_provider.cli.connection import AwsClientError, add_aws_arguments, aws_client

if TYPE_CHECKING:
    from airflow_quota_provider.airflow_pools.fleet import Fleet
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
    from airflow_quota_provider.airflow_pools.heartbeat import Heartbeat, HeartbeatBoard
    from airflow_quota_provider.pool_manager.config_watch import Running
    from airflow_quota_provider.pool_manager.manager import PoolManager

log = logging.getLogger("airflow_quota_provider.pool_manager")


START_PATIENCE_SECONDS = 60.0
"""How long a manager at start waits for an api-server that cannot be reached yet."""


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "pool-manager",
        help="run quota shares for any Airflow task through Airflow pools",
        description="Keep the Airflow pools of a quota config in line with the quota rules: "
        "each share's pool is shut between admissions and opens exactly the slots of the "
        "tasks admitted now, idle "
        "capacity is lent, and borrowers or lower-priority tasks are preempted by clearing "
        "them. Runs until stopped (SIGINT or SIGTERM).",
    )
    parser.add_argument("--config", required=True, help="the quota config (YAML or JSON)")
    parser.add_argument(
        "--interval", type=_positive, default=5.0, help="seconds between cycles (default 5)"
    )
    add_airflow_api_arguments(parser)
    parser.add_argument(
        "--start-timeout",
        type=_positive,
        default=START_PATIENCE_SECONDS,
        help="seconds to wait at start for an api-server that cannot be reached yet, then "
        f"exit 1 (default {START_PATIENCE_SECONDS:g}); a refused login exits at once",
    )
    parser.add_argument(
        "--history-days",
        type=_days,
        help="days the fleet's usage history is kept in the manager's database (default: "
        "the config's history_days, else 400): its changes for 7 days, 5-minute averages "
        "until 14, hourly ones after",
    )
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
    from airflow_quota_provider.airflow_pools.external import SageMakerTrainingJobs

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


def _days(text: str) -> float:
    return _more_than_zero(text, "days")


def _positive(text: str) -> float:
    return _more_than_zero(text, "seconds")


def _more_than_zero(text: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {unit}, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 {unit}, got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    """Start the manager: every check that can fail fails here, with exit code 1 and one
    line saying what and how to fix it; then cycle until stopped."""
    from airflow_quota_provider.pool_manager.config_watch import ConfigRefused, read_config

    try:
        running = read_config(Path(args.config))
    except ConfigRefused as refused:
        for problem in refused.problems:
            print(f"{args.config}: {problem}", file=sys.stderr)
        return 1
    config = running.config
    try:
        url, credentials = airflow_api(args.conn_id, args.api_url, args.username)
        external = _external_work(args)
    except ValueError as error:
        print(f"airflow-quota pool-manager: {error}", file=sys.stderr)
        return 1
    # imported here: SQLAlchemy takes a second to load
    from airflow_quota_provider.airflow_pools.fleet import Fleet
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
    from airflow_quota_provider.airflow_pools.heartbeat import HeartbeatBoard
    from airflow_quota_provider.airflow_pools.history_store import HistoryStore
    from airflow_quota_provider.airflow_pools.recording import CycleRecording
    from airflow_quota_provider.airflow_pools.store import Store
    from airflow_quota_provider.pool_manager.config_watch import ConfigWatch
    from airflow_quota_provider.pool_manager.lease import Lease, database_identity
    from airflow_quota_provider.pool_manager.manager import PoolManager

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    metrics.start()
    try:
        store = Store(args.database)
    except ValueError as error:
        print(f"airflow-quota pool-manager: --database: {error}", file=sys.stderr)
        return 1
    lease = Lease(store.engine, config.job_queue, args.lease or max(3.0, 1.5 * args.interval))
    gateway = AirflowGateway(url, credentials, write_budget=lease.time_left)
    reconciler = None
    if external is not None:
        from airflow_quota_provider.reconciler.reconciler import Reconciler
        from airflow_quota_provider.reconciler.sources import TrainingJobs

        jobs = TrainingJobs(external.client)
        reconciler = Reconciler([jobs], gateway, config.job_queue, args.orphan_grace)
    database_url = store.engine.url.render_as_string(hide_password=True)
    me = _heartbeat(lease.holder, database_identity(store.engine), database_url, args, running)
    board = HeartbeatBoard(gateway, config.job_queue)
    manager = PoolManager(
        Fleet.of(config),
        gateway,
        store,
        external=external,
        lease=lease,
        reconciler=reconciler,
        watch=ConfigWatch(args.config, running),
        heartbeat=board,
        me=me,
        recording=CycleRecording(HistoryStore(store, config.job_queue), days=args.history_days),
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
            f"{database_url}; {why}",
            file=sys.stderr,
        )
        return 1
    failed = _airflow_at_start(gateway, manager.fleet, args.start_timeout, board, me)
    if failed:
        for line in failed:
            print(f"airflow-quota pool-manager: {line}", file=sys.stderr)
        return 1
    log.info(
        "pool manager %s starts for fleet %s: config %s (%s), database %s, every %g s",
        lease.holder,
        config.job_queue,
        args.config,
        running.digest,
        database_url,
        args.interval,
    )
    lease.start()
    try:
        return _serve(manager, args)
    finally:
        lease.stop()


def _airflow_at_start(
    gateway: AirflowGateway, fleet: Fleet, patience: float, board: HeartbeatBoard, me: Heartbeat
) -> list[str]:
    """Why the manager cannot start with this Airflow, if it cannot: an api-server not
    reachable within ``patience`` seconds, a login refused, a user who may not read pools
    (each with how ``airflow-quota doctor`` checks it), a config that names another fleet's
    pools, or another manager that acts."""
    from airflow_quota_provider.airflow_pools.heartbeat import AnotherLeader

    deadline = time.monotonic() + patience
    while True:
        try:
            pools = gateway.pools()
            break
        except GatewayError as error:
            if error.status is not None or time.monotonic() > deadline:
                return _with_doctor(error, me.config_path)
            log.warning("%s; waiting for it up to %g s", error.kind_and_cause(), patience)
            time.sleep(min(2.0, patience / 4))
    foreign = fleet.foreign_pools(pools)
    if foreign:
        return [f"the config names another fleet's pools: {'; '.join(foreign)}"]
    try:
        board.check(me)
    except AnotherLeader as error:
        return [str(error)]
    except GatewayError as error:
        return _with_doctor(error, me.config_path)
    return []


def _with_doctor(error: GatewayError, config: str) -> list[str]:
    """What failed, and the check users can run to find why."""
    doctor = (
        f"`airflow-quota doctor --config {config}` checks this installation and what the "
        "manager's user may do"
    )
    return [error.kind_and_cause(), doctor]


def _heartbeat(
    holder: str, database: str, database_url: str, args: argparse.Namespace, running: Running
) -> Heartbeat:
    from airflow_quota_provider.airflow_pools.heartbeat import HEARTBEAT_SECONDS, Heartbeat

    return Heartbeat(
        beat_every=HEARTBEAT_SECONDS,
        manager=holder,
        database=database,
        database_url=database_url,
        interval=args.interval,
        started_at=time.time(),
        config_path=str(Path(args.config).resolve()),
        config_digest=running.digest,
        config_text=running.text,
    )


def _serve(manager: PoolManager, args: argparse.Namespace) -> int:
    if args.once:
        report = manager.cycle()
        for start in report.plan.start:
            print(f"start {start.key} in {start.pool} ({start.slots} slots)")
        for stop in report.plan.stop:
            print(f"preempt {stop.key}: {stop.note}")
        for key, wait in report.plan.waiting.items():
            print(f"wait {key}: {wait.code.value}: {wait.message}")
        if not (report.plan.start or report.plan.stop or report.plan.waiting):
            fleet = manager.fleet.config.job_queue
            print(f"nothing to do for fleet {fleet}: no task waits, none is to be preempted")
        return 0
    stopping: list[str] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _: stopping.append(signal.Signals(number).name))
    if manager.watch is not None:
        watch = manager.watch
        signal.signal(signal.SIGHUP, lambda *_: watch.reread())
    why = manager.run(args.interval, should_stop=lambda: bool(stopping))
    if stopping:
        why = f"{stopping[0]} received"
    log.info("pool manager stops: %s", why)
    return 0 if stopping else 1
