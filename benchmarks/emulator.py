"""Requests per second the local AWS endpoint answers, and 1,000 jobs through one queue.

Run: ``.venv/bin/python benchmarks/emulator.py [--repeat 5] [--requests 500] [--jobs 1000]
[--held 0] [--parts describe,submit,state,jobs]``

- DescribeServiceJob and SubmitServiceJob: one boto3 client over real HTTP
  (loopback, keep-alive) calling back to back; the figure is the median
  requests per second of ``--repeat`` runs of ``--requests`` calls. Submit is
  measured twice: in memory and with ``--state`` (an SQLite file saved after
  every request), each run on a new file that, with ``--held N``, already
  holds N submitted jobs (put there in process, before the endpoint starts).
- 1,000 jobs: a queue of 2 shares x 16 ml.p4d.24xlarge at ``--time-scale 3600``,
  every job one instance for 600 emulated seconds; the client submits them
  all, then polls ListServiceJobs (SUCCEEDED, pages of 100) every 0.25 s. The
  figures are the real seconds until all succeeded and the requests made, as
  ``GET /_emulator/stats`` counts them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from airflow_quota_provider.emulator import Emulator, EmulatorOptions, local_endpoint
from airflow_quota_provider.emulator.bootstrap import apply_config

P4D = "ml.p4d.24xlarge"
QUEUE = QueueConfig(
    job_queue="bench",
    capacity={P4D: 32},
    shares=(
        Share("a", {P4D: 16}, Sharing.LEND_AND_BORROW),
        Share("b", {P4D: 16}, Sharing.LEND_AND_BORROW),
    ),
)
PAYLOAD = json.dumps(
    {
        "TrainingJobName": "bench",
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "image:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {"InstanceType": P4D, "InstanceCount": 1, "VolumeSizeInGB": 50},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
    }
)


def client(url: str) -> Any:
    return boto3.client(
        "batch",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(retries={"total_max_attempts": 1}),
    )


def submission(n: int) -> dict[str, Any]:
    return {
        "jobName": f"job-{n}",
        "jobQueue": "bench",
        "quotaShareName": "ab"[n % 2],
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": PAYLOAD,
        "tags": {"emulator:duration-seconds": "600"},
    }


def submit(batch: Any, n: int) -> str:
    job_id: str = batch.submit_service_job(**submission(n))["jobId"]
    return job_id


def holding(file: Path, jobs: int) -> Path:
    """``file``, a new state file holding :data:`QUEUE` and ``jobs`` submitted jobs."""
    emulator = Emulator(EmulatorOptions(time_scale=0, state=file))
    apply_config(emulator, QUEUE)
    for n in range(jobs):
        emulator.call("batch", "SubmitServiceJob", submission(n))
    emulator.close()
    return file


def rate(calls: int, call: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for n in range(calls):
        call(n)
    return calls / (time.perf_counter() - started)


def describe_rate(requests: int, repeat: int) -> float:
    with local_endpoint(QUEUE, time_scale=0) as url:
        batch = client(url)
        job_id = submit(batch, 0)
        rate(50, lambda _: batch.describe_service_job(jobId=job_id))  # warm up
        runs = [
            rate(requests, lambda _: batch.describe_service_job(jobId=job_id))
            for _ in range(repeat)
        ]
    return statistics.median(runs)


def submit_rate(requests: int, repeat: int, state: Path | None = None, held: int = 0) -> float:
    runs = []
    for run in range(repeat):
        file = None if state is None else holding(state / f"run-{run}.sqlite", held)
        with local_endpoint(QUEUE, time_scale=0, state=file) as url:
            batch = client(url)
            rate(20, partial(submit, batch))  # warm up
            runs.append(rate(requests, partial(submit, batch)))
    return statistics.median(runs)


def thousand_jobs(jobs: int) -> tuple[float, float, int]:
    """(seconds to submit, seconds until all succeeded, requests made)."""
    with local_endpoint(QUEUE, time_scale=3600) as url:
        batch = client(url)
        started = time.perf_counter()
        for n in range(jobs):
            submit(batch, n)
        submitted = time.perf_counter() - started
        while succeeded(batch) < jobs:
            time.sleep(0.25)
        finished = time.perf_counter() - started
        with urllib.request.urlopen(f"{url}/_emulator/stats") as response:
            requests: int = json.load(response)["requests"]
    return submitted, finished, requests


def succeeded(batch: Any) -> int:
    count, params = 0, {"jobQueue": "bench", "jobStatus": "SUCCEEDED", "maxResults": 100}
    while True:
        page = batch.list_service_jobs(**params)
        count += len(page["jobSummaryList"])
        if not page.get("nextToken"):
            return count
        params["nextToken"] = page["nextToken"]


PARTS = ("describe", "submit", "state", "jobs")


def measure(part: str, args: argparse.Namespace) -> list[tuple[str, str]]:
    """The rows of one part of the benchmark."""
    if part == "describe":
        return [("DescribeServiceJob", f"{describe_rate(args.requests, args.repeat):,.0f} req/s")]
    if part == "submit":
        return [("SubmitServiceJob", f"{submit_rate(args.requests, args.repeat):,.0f} req/s")]
    if part == "state":
        with tempfile.TemporaryDirectory() as directory:
            persisted = submit_rate(args.requests, args.repeat, Path(directory), args.held)
        held = f", {args.held:,} jobs held" if args.held else ""
        return [(f"SubmitServiceJob, --state{held}", f"{persisted:,.0f} req/s")]
    submitted, finished, requests = thousand_jobs(args.jobs)
    return [
        (f"{args.jobs:,} jobs at --time-scale 3600: submitted", f"{submitted:.1f} s"),
        (f"{args.jobs:,} jobs at --time-scale 3600: all SUCCEEDED", f"{finished:.1f} s"),
        (f"{args.jobs:,} jobs at --time-scale 3600: requests made", f"{requests:,}"),
    ]


def parts(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown parts {', '.join(unknown)}; choose from {PARTS}")
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--held", type=int, default=0, help="jobs the --state file holds before the submits"
    )
    parser.add_argument(
        "--parts", type=parts, default=list(PARTS), help="comma-separated, all by default"
    )
    args = parser.parse_args()
    rows = [row for part in args.parts for row in measure(part, args)]
    print(f"median of {args.repeat} runs of {args.requests} requests each")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
