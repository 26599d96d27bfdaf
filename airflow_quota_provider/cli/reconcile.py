"""``airflow-quota reconcile --config FILE [--loop]``: stop our jobs that no task watches.

For a config with ``backend: aws_batch`` it looks at the service jobs of its job
queue; for ``backend: airflow_pools``, at SageMaker training jobs created
directly by our operator. A job is stopped once its ``airflow:*`` tags have named
a task instance that is not running or deferred (or is gone, or has moved on to
a later try) for ``--grace`` seconds. Jobs without our tags are never touched.
The pool manager does the same for SageMaker when run with ``--watch-sagemaker``;
this command is for deployments that use only the AWS Batch operator.

Exit codes: 0 done (or stopped by a signal), 1 bad config or connection, or a pass
that failed (without ``--loop``), 2 usage error.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from airflow_quota_provider import metrics
from airflow_quota_provider.cli.airflow_api import add_airflow_api_arguments, airflow_api
from airflow_quota_provider.cli.connection import AwsClientError, add_aws_arguments, aws_client
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.exceptions import ConfigError

if TYPE_CHECKING:
    from airflow_quota_provider.reconciler.reconciler import Reconciler

log = logging.getLogger(__name__)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "reconcile",
        help="stop service or training jobs whose task no longer watches them",
        description="Find the AWS Batch service jobs (backend: aws_batch) or SageMaker "
        "training jobs (backend: airflow_pools) that carry a task instance's airflow:* tags "
        "while that task is no longer running or deferred (marked failed, cleared, deleted, "
        "its run deleted, or on a later try), and stop them once that has lasted --grace "
        "seconds. Jobs without those tags are never touched.",
    )
    parser.add_argument("--config", required=True, help="the quota config (YAML or JSON)")
    parser.add_argument(
        "--grace",
        type=_seconds(allow_zero=True),
        default=300.0,
        help="seconds a job must have had no watching task before it is stopped (default 300)",
    )
    parser.add_argument(
        "--loop", action="store_true", help="keep reconciling every --interval until stopped"
    )
    parser.add_argument(
        "--interval",
        type=_seconds(allow_zero=False),
        default=60.0,
        help="seconds between passes with --loop (default 60)",
    )
    add_airflow_api_arguments(parser, database=False)
    add_aws_arguments(parser.add_argument_group("AWS"))
    parser.set_defaults(handler=run)


def _seconds(*, allow_zero: bool) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
        if value < 0 or (value == 0 and not allow_zero):
            least = "0 or more" if allow_zero else "more than 0"
            raise argparse.ArgumentTypeError(f"must be {least} seconds, got {text}")
        return value

    return parse


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{args.config}: {problem}", file=sys.stderr)
        return 1
    try:
        url, credentials = airflow_api(args.conn_id, args.api_url, args.username)
        service = "batch" if config.backend is Backend.AWS_BATCH else "sagemaker"
        client = aws_client(service, args)
    except AwsClientError as error:
        print(f"airflow-quota reconcile: the AWS client: {error}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"airflow-quota reconcile: {error}", file=sys.stderr)
        return 1
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
    from airflow_quota_provider.reconciler.reconciler import Reconciler
    from airflow_quota_provider.reconciler.sources import JobSource, ServiceJobs, TrainingJobs

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    metrics.start()
    source: JobSource
    if config.backend is Backend.AWS_BATCH:
        source = ServiceJobs(client, (config.job_queue,))
    else:
        source = TrainingJobs(client)
    gateway = AirflowGateway(url, credentials)
    reconciler = Reconciler([source], gateway, config.job_queue, args.grace)
    if not args.loop:
        return 0 if _pass(reconciler) else 1
    stopping: list[bool] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.append(True))
    while not stopping:
        _pass(reconciler)
        deadline = time.monotonic() + args.interval
        while not stopping and time.monotonic() < deadline:
            time.sleep(min(0.2, args.interval))
    return 0


def _pass(reconciler: Reconciler) -> bool:
    from airflow_quota_provider.airflow_pools.gateway import GatewayError
    from airflow_quota_provider.reconciler.sources import JobsUnknown

    try:
        stopped = reconciler.reconcile()
    except (GatewayError, JobsUnknown) as error:
        log.warning("reconcile pass stopped, nothing more stopped: %s", error)
        return False
    log.info(
        "reconcile pass: %d stopped, %d more without a watching task (within --grace)",
        len(stopped),
        reconciler.waiting,
    )
    return True
