"""``airflow-quota usage``: the showback report, per share and instance type, over a window.

Per share and unit: instance-hours used within what the share owns, borrowed from
others, lent to others and left idle; jobs first started in the window with their
mean and 95th-percentile total wait (every wait before each start, a job requeued
after a preemption waits again); preemptions suffered and caused; instance-hours of
work lost (:func:`~airflow_quota_provider.core.showback.usage_report`).

Both backends are read through one
:class:`~airflow_quota_provider.core.history_chart.HistorySource`, as the page reads
them. For an ``aws_batch`` config the history is rebuilt from what AWS keeps of the
queue's jobs (:class:`~airflow_quota_provider.view.backend.BatchHistory`: each moment
with the config then in force as apply's tags record it, the notes saying where they do
not reach; jobs AWS no longer lists are not counted); "now"
is AWS's clock (the queue snapshot's). Connection: ``--aws-conn-id`` or the usual
AWS environment, with ``--region`` and ``--endpoint-url`` overrides, as ``status``
takes them. For an ``airflow_pools`` config it is what the pool manager recorded in
its ``--database``
(:class:`~airflow_quota_provider.airflow_pools.history_store.PoolsHistory`), hours
being hours of each unit's slots (``gpu-h``); "now" is this host's clock.

Exit codes: 0 done, 1 a config file that cannot be read, a failed AWS call (an
unknown job queue included), or a pools fleet whose database holds no history, 2 bad
options.
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

from airflow_quota_provider.cli.airflow_api import add_database_argument
from airflow_quota_provider.cli.connection import add_aws_arguments
from airflow_quota_provider.core.history_chart import HistoryReading, HistorySource
from airflow_quota_provider.core.model import QueueConfig
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
    add_database_argument(usage)
    usage.set_defaults(handler=run_usage)


def run_usage(args: argparse.Namespace) -> int:
    from airflow_quota_provider.aws_batch.errors import AwsCallFailed
    from airflow_quota_provider.config_file import load_config
    from airflow_quota_provider.exceptions import ConfigError, ViewError

    try:
        since = parse_when("--since", args.since)
        until = parse_when("--until", args.until) if args.until else When("now", ago=0)
        if (since.ago is None) == (until.ago is None):  # else once the clock is read
            _check_order(since, until, None)
    except UsageError as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        return _fail("; ".join(f"{args.config}: {p}" for p in error.problems), EXIT_ERROR)
    try:
        reading = _read(_source(args, config), since, until)
    except UsageError as error:
        return _fail(str(error), EXIT_USAGE)
    except (AwsCallFailed, ViewError, ValueError) as error:
        return _fail(str(error), EXIT_ERROR)
    print("\n".join(report_lines(reading, args)))
    return EXIT_OK


def _source(args: argparse.Namespace, config: QueueConfig) -> HistorySource:
    """Where the history of ``config``'s queue or fleet comes from."""
    from airflow_quota_provider.core.model import Backend

    if config.backend is Backend.AIRFLOW_POOLS:
        from airflow_quota_provider.airflow_pools.fleet import Fleet
        from airflow_quota_provider.airflow_pools.history_store import PoolsHistory
        from airflow_quota_provider.airflow_pools.store import Store

        return PoolsHistory(Store(args.database, create=False), Fleet.of(config))
    # Airflow logs its progress to stdout at INFO, which would mix with the report.
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    from airflow_quota_provider.hooks.batch import BatchQuotaHook
    from airflow_quota_provider.view.backend import BatchHistory

    region = args.region or os.environ.get("AWS_REGION") or None
    hook = BatchQuotaHook(
        aws_conn_id=args.aws_conn_id, region_name=region, endpoint_url=args.endpoint_url
    )
    return BatchHistory(hook, config.job_queue)


def _check_order(since: When, until: When, now: int | None) -> None:
    """Refuse a window that ends before it starts; its times shown as given while ``now``
    is not known yet (two durations before now)."""
    start, end = since.resolve(now or 0), until.resolve(now or 0)
    if end <= start:
        raise UsageError(
            f"--until {_shown(until, end, now)} is not after --since {_shown(since, start, now)}"
            ": the window must end after it starts"
        )


def _shown(when: When, at: int, now: int | None) -> str:
    if now is None and when.ago is not None:
        return repr(when.text)
    return f"{when.text!r} ({_utc(at)})"


def _read(source: HistorySource, since: When, until: When) -> HistoryReading:
    from airflow_quota_provider.core.history_chart import between

    now = source.now()
    _check_order(since, until, now)
    # nothing is known after now: a window reaching past it ends there
    start, end = since.resolve(now), min(until.resolve(now), now)
    if start >= now:
        raise UsageError(
            f"--since {since.text!r} ({_utc(start)}) is not before now by {source.clock} "
            f"({_utc(now)}): nothing is known of that window yet"
        )
    return source.reading(between(start, end))


def report_lines(reading: HistoryReading, args: argparse.Namespace) -> list[str]:
    """The report as ``--csv``, ``--json`` or a table asks."""
    rows = reading.usage().rows
    win = reading.window
    if args.csv:
        for note in reading.notes:  # the CSV stays a table
            print(f"note: {note}", file=sys.stderr)
        return [as_csv(rows).rstrip("\n")]
    if args.json:
        data: dict[str, Any] = {"job_queue": reading.queue, "since": win.since, "until": win.until}
        data.update(rows=[asdict(row) for row in rows], notes=list(reading.notes))
        return [json.dumps(data, indent=2)]
    return [*text_lines(rows, reading), *(f"note: {note}" for note in reading.notes)]


def text_lines(rows: Sequence[ShareUsage], reading: HistoryReading) -> list[str]:
    from airflow_quota_provider.view.text import table

    win = reading.window
    title = f"usage of {reading.kind} {reading.queue} from {_utc(win.since)} to {_utc(win.until)}"
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
    return [title, *table(COLUMNS, cells), _hours_note(reading.kind, rows)]


def _hours_note(kind: str, rows: Sequence[ShareUsage]) -> str:
    """What the hours count: AWS Batch's instances, a pools fleet's slots of each unit."""
    waits = "waits are each job's total wait before its starts"
    if kind != "fleet":
        return f"hours are instance-hours; {waits}"
    units = ", ".join(f"{unit}-h" for unit in sorted({row.unit for row in rows}))
    return f"hours are hours of each unit's slots ({units}); {waits}"


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
