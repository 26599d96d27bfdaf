"""``airflow-quota emulator``: serve the local AWS endpoint for Batch quota shares and SageMaker."""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import sqlite3
import sys
from types import FrameType
from typing import Any

from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.emulator.bootstrap import apply_config
from airflow_quota_provider.emulator.emulator import Emulator, EmulatorOptions
from airflow_quota_provider.emulator.errors import ApiError
from airflow_quota_provider.emulator.faults import FaultOptions
from airflow_quota_provider.emulator.server import MAX_PORT, MIN_PORT, EmulatorServer
from airflow_quota_provider.emulator.state_file import StateFileError
from airflow_quota_provider.exceptions import ConfigError

DEFAULT_PORT = 4599


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "emulator",
        help="serve a local AWS endpoint for Batch quota shares and SageMaker training jobs",
        description="Serve AWS Batch (service environments, scheduling policies, job queues, "
        "quota shares, service jobs) and SageMaker training jobs on one local endpoint. "
        "Point boto3 or the AWS CLI at it with endpoint_url / AWS_ENDPOINT_URL and any "
        "dummy credentials.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port to listen on, {MIN_PORT} to {MAX_PORT} (0 picks a free one; "
        f"default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="N",
        help="emulated seconds per real second (60: a two-hour run takes two minutes; "
        "0: time moves only through POST /_emulator/clock)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="quota config (YAML or JSON) whose environment, policy, queue and shares "
        "are created at start",
    )
    parser.add_argument("--region", default="us-east-1", help="region in the ARNs")
    parser.add_argument(
        "--instance-limit",
        action="append",
        default=[],
        metavar="TYPE=COUNT",
        help="instances of TYPE that direct CreateTrainingJob calls may hold (repeatable)",
    )
    parser.add_argument(
        "--state",
        metavar="FILE",
        help="SQLite file keeping every queue, share and job across restarts; the emulated "
        "clock resumes where it stopped (--config applies only to a new file)",
    )
    add_fault_arguments(parser)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.set_defaults(handler=run)


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    faults = parser.add_argument_group("faults", "for reliability tests; never on /_emulator/*")
    faults.add_argument(
        "--throttle-rate",
        type=float,
        default=0.0,
        metavar="F",
        help="fraction of requests answered with the service's throttling error "
        "(Batch TooManyRequestsException 429, SageMaker ThrottlingException)",
    )
    faults.add_argument(
        "--error-rate",
        type=float,
        default=0.0,
        metavar="F",
        help="fraction of requests answered with a 500 (ServerException, InternalFailure)",
    )
    faults.add_argument(
        "--latency-ms", type=float, default=0.0, metavar="MS", help="delay before every answer"
    )
    faults.add_argument(
        "--capacity-error-rate",
        type=float,
        default=0.0,
        metavar="F",
        help="fraction of dispatched jobs whose training job fails with CapacityError, "
        "sending the job back to RUNNABLE",
    )
    faults.add_argument("--seed", type=int, help="make the faults reproducible")


def fault_options(args: argparse.Namespace) -> FaultOptions:
    return FaultOptions(
        throttle_rate=args.throttle_rate,
        error_rate=args.error_rate,
        latency_ms=args.latency_ms,
        capacity_error_rate=args.capacity_error_rate,
        seed=args.seed,
    )


def port_number(text: str) -> int:
    """``--port``: argparse reports what is wrong with it, as for any other argument."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from {MIN_PORT} to {MAX_PORT}, got {text!r}"
        ) from None
    if not MIN_PORT <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"must be from {MIN_PORT} to {MAX_PORT} (0 picks a free port), got {port}"
        )
    return port


def parse_limits(values: list[str]) -> dict[str, int]:
    limits: dict[str, int] = {}
    for value in values:
        kind, _, count = value.partition("=")
        if not kind or not count.isdigit():
            raise ValueError(f"--instance-limit expects TYPE=COUNT, got {value!r}")
        limits[kind] = int(count)
    return limits


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO)
    emulator = build(args)
    if isinstance(emulator, int):
        return emulator
    try:
        server = EmulatorServer(emulator, args.host, args.port)
    except OSError as error:
        emulator.close()
        print(f"cannot listen on {args.host}:{args.port}: {_why(error)}", file=sys.stderr)
        return 1
    # SIGTERM (docker stop, Popen.terminate) stops as cleanly as Ctrl-C: the state is saved;
    # set before saying it serves, so a stop right after the line is clean too.
    signal.signal(signal.SIGTERM, _interrupt)
    restored = f" (state restored from {args.state})" if emulator.restored else ""
    try:
        scale = f"time scale {args.time_scale:g}"
        print(f"serving Batch and SageMaker on {server.url} ({scale}){restored}")
        sys.stdout.flush()
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
        emulator.close()
    return 0


def _why(error: OSError) -> str:
    """The system's words for a failed bind, and what to do when the port is taken."""
    why = error.strerror or str(error)
    if error.errno == errno.EADDRINUSE:
        why += " (another process listens there: choose another --port, or --port 0 for a free one)"
    return why


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def build(args: argparse.Namespace) -> Emulator | int:
    """The emulator the arguments describe, its ``--config`` applied; or an exit code."""
    if args.time_scale < 0:
        print(f"--time-scale must be >= 0, got {args.time_scale:g}", file=sys.stderr)
        return 2
    try:
        limits = parse_limits(args.instance_limit)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    faults = fault_options(args)
    if faults.problems():
        print("\n".join(faults.problems()), file=sys.stderr)
        return 2
    options = EmulatorOptions(
        time_scale=args.time_scale,
        region=args.region,
        instance_limits=limits,
        state=args.state,
        faults=faults,
    )
    try:
        emulator = Emulator(options)
    except (StateFileError, sqlite3.DatabaseError) as error:
        print(f"{args.state}: {error}", file=sys.stderr)
        return 1
    if not args.config or emulator.restored:
        return emulator
    try:
        apply_config(emulator, load_config(args.config))
    except ConfigError as error:
        for problem in error.problems:
            print(f"{args.config}: {problem}", file=sys.stderr)
        return 1
    except ApiError as error:
        print(f"{args.config}: {error.code}: {error.message}", file=sys.stderr)
        return 1
    return emulator
