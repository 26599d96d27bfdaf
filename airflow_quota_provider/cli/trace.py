"""``airflow-quota trace export``: a job queue's service-job history as a replayable trace."""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from airflow_quota_provider.aws_batch.errors import AwsCallFailed, aws_call
from airflow_quota_provider.aws_batch.paging import all_items
from airflow_quota_provider.checkpoints import DEFAULT_CHECKPOINT_INTERVAL
from airflow_quota_provider.cli.replay import number_type
from airflow_quota_provider.cli.sync import batch_client
from airflow_quota_provider.simulation.trace_export import export_jobs

_SINCE = re.compile(r"(\d+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _since(text: str) -> float:
    match = _SINCE.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(
            f"must be a positive duration such as 30d, 12h, 90m or 600s, got {text!r}"
        )
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def add_parser(commands: Any) -> None:
    trace: argparse.ArgumentParser = commands.add_parser(
        "trace", help="job traces for simulate --trace", description="Job traces."
    )
    actions = trace.add_subparsers(dest="action", required=True, metavar="ACTION")
    export: argparse.ArgumentParser = actions.add_parser(
        "export",
        help="write a queue's service jobs as a csv trace",
        description="Read the service jobs a job queue had in a recent period (AWS Batch or "
        "the local endpoint) and write them as a csv trace for simulate --trace, so the "
        "same demand can be replayed under another quota config. A job's duration is the "
        "work it did: over all its attempts, the run time less what preempted attempts "
        "lost since their last checkpoint (jobs whose payload has CheckpointConfig.S3Uri "
        "checkpoint every emulator:checkpoint-interval-seconds, the tag, or every "
        "--checkpoint-interval seconds). Only jobs that succeeded are written: the work a "
        "terminated or failed job needed is not known, and writing what it did would "
        "replay it as a shorter job that succeeds; the summary on stderr counts the jobs "
        "left out by reason and the instance time they held.",
    )
    export.add_argument("--job-queue", required=True, help="the AWS Batch job queue")
    export.add_argument(
        "--since",
        type=_since,
        default=_since("30d"),
        metavar="DURATION",
        help="how far back jobs were created: 30d (default), 12h, 90m, 600s",
    )
    export.add_argument(
        "--checkpoint-interval",
        type=number_type(0, strict=True),
        default=DEFAULT_CHECKPOINT_INTERVAL,
        metavar="SECONDS",
        help="seconds between checkpoints of a job with CheckpointConfig.S3Uri and no "
        f"emulator:checkpoint-interval-seconds tag; default {DEFAULT_CHECKPOINT_INTERVAL:g} "
        "(the local endpoint's)",
    )
    export.add_argument("--output", "-o", metavar="FILE", help="csv file; default stdout")
    export.add_argument("--aws-conn-id", help="Airflow connection to use")
    export.add_argument("--region", help="AWS region, overriding the environment or connection")
    export.add_argument("--endpoint-url", help="Batch endpoint, e.g. the local endpoint's URL")
    export.set_defaults(handler=run_export)


def _described(batch: Any, job_queue: str, since_ms: int) -> list[dict[str, Any]]:
    """Every service job of ``job_queue`` created after ``since_ms``, described."""
    since = [{"name": "AFTER_CREATED_AT", "values": [str(since_ms)]}]
    with aws_call("ListServiceJobs"):
        summaries = list(
            all_items(batch, "ListServiceJobs", "jobSummaryList", jobQueue=job_queue, filters=since)
        )
    with aws_call("DescribeServiceJob"):
        return [batch.describe_service_job(jobId=summary["jobId"]) for summary in summaries]


def run_export(args: argparse.Namespace) -> int:
    now_ms = int(time.time() * 1000)
    try:
        batch = batch_client(args)
        jobs = _described(batch, args.job_queue, now_ms - int(args.since * 1000))
    except AwsCallFailed as error:
        print(f"error: reading the service jobs of {args.job_queue}: {error}", file=sys.stderr)
        return 1
    export = export_jobs(jobs, args.checkpoint_interval)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as file:
            export.write(file)
    else:
        export.write(sys.stdout)
    print(export.summary(args.job_queue), file=sys.stderr)
    return 0
