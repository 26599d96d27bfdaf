"""``airflow-quota usage``: the showback report, per share and instance type, over a window.

Per share and unit: instance-hours used within what the share owns, borrowed from
others, lent to others and left idle; jobs first started in the window with their
mean and 95th-percentile total wait (every wait before each start, a job requeued
after a preemption waits again); preemptions suffered and caused; instance-hours of
work lost (:func:`~airflow_quota_provider.core.showback.usage_report`).

For an ``aws_batch`` config the history is rebuilt from what AWS keeps of the
queue's jobs (:mod:`~airflow_quota_provider.aws_batch.history`: today's quota
shares stand for the past, and jobs AWS no longer lists are not counted); "now"
is AWS's clock (the queue snapshot's). Connection: ``--aws-conn-id`` or the usual
AWS environment, with ``--region`` and ``--endpoint-url`` overrides, as ``status``
takes them. For an ``airflow_pools`` config the pool manager will record the
history in its database; it does not yet, and the command says so (exit code 2).

Exit codes: 0 done, 1 a config file that cannot be read or a failed AWS call (an
unknown job queue included), 2 bad options or a pools fleet.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_quota_provider.cli.connection import add_aws_arguments
from airflow_quota_provider.core.showback import ShareUsage, as_csv

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
ALLOWED = (
    "a duration before now (90s, 30m, 12h, 7d, 2w) or a UTC time (2026-12-01, 2026-12-01T08:00:00Z)"
)
COLUMNS = (
    "SHARE",
    "UNIT",
    "OWN H",
    "BORROWED H",
    "LENT H",
    "IDLE H",
    "JOBS",
    "MEAN WAIT",
    "P95 WAIT",
    "PREEMPTED",
    "CAUSED",
    "LOST H",
)


class UsageError(ValueError):
    """An option the command cannot use; the message names it and what is allowed."""


@dataclass(frozen=True)
class When:
    """A point in time as given: ``ago`` milliseconds before now, or at ``at`` (epoch ms)."""

    text: str
    ago: int | None = None
    at: int | None = None

    def resolve(self, now: int) -> int:
        return now - self.ago if self.ago is not None else int(self.at or 0)


def parse_when(option: str, text: str) -> When:
    """``7d`` (before now) or an ISO time (UTC unless it says otherwise)."""
    duration = _DURATION.fullmatch(text.strip())
    if duration:
        seconds = float(duration.group(1)) * UNIT_SECONDS[duration.group(2)]
        return When(text, ago=round(seconds * 1000))
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"{option} {text!r} is not a time: give {ALLOWED}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return When(text, at=round(moment.timestamp() * 1000))


def add_parser(commands: Any) -> None:
    usage = commands.add_parser(
        "usage",
        help="showback: per share and instance type, instance-hours used, borrowed, lent, "
        "idle; waits; preemptions and work lost",
        description="The showback report of a job queue (or pools fleet) over a window: per "
        "share and instance type, instance-hours used within its own capacity, borrowed from "
        "others, lent to others and left idle; jobs started with their mean and p95 total "
        "wait; preemptions suffered and caused; instance-hours of work lost.",
    )
    usage.add_argument(
        "--config", required=True, help="the quota config of the job queue or pools fleet"
    )
    usage.add_argument("--since", required=True, help=f"start of the window: {ALLOWED}")
    usage.add_argument("--until", help=f"end of the window (default now): {ALLOWED}")
    form = usage.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="print CSV with a header row")
    form.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_aws_arguments(usage)
    usage.set_defaults(handler=run_usage)


def run_usage(args: argparse.Namespace) -> int:
    from airflow_quota_provider.aws_batch.errors import AwsCallFailed
    from airflow_quota_provider.config_file import load_config
    from airflow_quota_provider.core.model import Backend
    from airflow_quota_provider.exceptions import ConfigError

    try:
        since = parse_when("--since", args.since)
        until = parse_when("--until", args.until) if args.until else When("now", ago=0)
        if (since.ago is None) == (until.ago is None):  # else once AWS's clock is read
            _check_order(since, until, now=0)
    except UsageError as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        return _fail("; ".join(f"{args.config}: {p}" for p in error.problems), EXIT_ERROR)
    if config.backend is Backend.AIRFLOW_POOLS:
        # Not built yet: the pool manager is to record the history in its database.
        return _fail(
            f"{args.config} is a pools fleet ({config.job_queue}): its usage history is "
            "recorded by the pool manager in its database, which does not record it yet; "
            "no report is available for a pools fleet",
            EXIT_USAGE,
        )
    try:
        rows, start, end = _aws_report(args, config.job_queue, since, until)
    except UsageError as error:
        return _fail(str(error), EXIT_USAGE)
    except (AwsCallFailed, ValueError) as error:
        return _fail(str(error), EXIT_ERROR)
    print("\n".join(report_lines(rows, config.job_queue, start, end, args)))
    return EXIT_OK


def _check_order(since: When, until: When, now: int) -> None:
    start, end = since.resolve(now), until.resolve(now)
    if end <= start:
        raise UsageError(
            f"--until {until.text!r} ({_utc(end)}) is not after --since {since.text!r} "
            f"({_utc(start)}): the window must end after it starts"
        )


def _aws_report(
    args: argparse.Namespace, job_queue: str, since: When, until: When
) -> tuple[list[ShareUsage], int, int]:
    # Airflow logs its progress to stdout at INFO, which would mix with the report.
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    from airflow_quota_provider.aws_batch.clock import now_of
    from airflow_quota_provider.aws_batch.errors import aws_call
    from airflow_quota_provider.aws_batch.history import rebuild
    from airflow_quota_provider.core.showback import usage_report
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    region = args.region or os.environ.get("AWS_REGION") or None
    hook = BatchQuotaHook(
        aws_conn_id=args.aws_conn_id, region_name=region, endpoint_url=args.endpoint_url
    )
    with aws_call("DescribeJobQueues, DescribeServiceEnvironments, ListQuotaShares"):
        config = hook.queue_config(job_queue)
    with aws_call("GetJobQueueSnapshot"):
        now = now_of(hook.get_job_queue_snapshot(job_queue))
    _check_order(since, until, now)
    # nothing is known after now: a window reaching past it ends there
    start, end = since.resolve(now), min(until.resolve(now), now)
    if start >= now:
        raise UsageError(
            f"--since {since.text!r} ({_utc(start)}) is not before now by AWS's clock "
            f"({_utc(now)}): nothing is known of that window yet"
        )
    with aws_call("ListServiceJobs, DescribeServiceJob"):
        jobs = hook.service_jobs_since(job_queue, start)
    history = rebuild(config, jobs, start, end)
    return usage_report(history, start, end), start, end


def report_lines(
    rows: Sequence[ShareUsage], job_queue: str, since: int, until: int, args: argparse.Namespace
) -> list[str]:
    """The report as ``--csv``, ``--json`` or a table asks."""
    if args.csv:
        return [as_csv(rows).rstrip("\n")]
    if args.json:
        data = {"job_queue": job_queue, "since": since, "until": until}
        return [json.dumps({**data, "rows": [asdict(row) for row in rows]}, indent=2)]
    return text_lines(rows, job_queue, since, until)


def text_lines(rows: Sequence[ShareUsage], job_queue: str, since: int, until: int) -> list[str]:
    from airflow_quota_provider.view.text import table

    title = f"usage of job queue {job_queue} from {_utc(since)} to {_utc(until)}"
    if not rows:
        return [title, "no share used, lent or waited in this window"]
    cells = [
        [
            row.share,
            row.unit,
            _hours(row.own_use_hours),
            _hours(row.borrowed_hours),
            _hours(row.lent_hours),
            _hours(row.idle_hours),
            str(row.jobs_started),
            _wait(row.mean_wait),
            _wait(row.p95_wait),
            str(row.preemptions_suffered),
            str(row.preemptions_caused),
            _hours(row.hours_lost),
        ]
        for row in rows
    ]
    note = "hours are instance-hours; waits are each job's total wait before its starts"
    return [title, *table(COLUMNS, cells), note]


def _hours(value: float) -> str:
    return f"{value:.2f}"


def _wait(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _utc(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
