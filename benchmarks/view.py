"""What one read of a queue by the GPU Quotas backend costs: AWS calls and time.

Run: ``.venv/bin/python benchmarks/view.py [--repeat 5] [--waiting 300]``

A queue of 2 shares x 16 ml.p4d.24xlarge on the local endpoint, time
stopped: 32 one-instance jobs hold all of it and ``--waiting`` more wait
(alternating shares). A cold read (a new ``BatchBackend``, as when the cache
has expired) is timed ``--repeat`` times; printed: the median seconds, the
AWS calls of one read as ``GET /_emulator/stats`` counts them, and the median
time of a read served from the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request

from emulator import PAYLOAD, QUEUE, client

from airflow_quota_provider.emulator import local_endpoint


def calls(url: str) -> int:
    with urllib.request.urlopen(f"{url}/_emulator/stats") as answer:
        count: int = json.load(answer)["requests"]
    return count


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--waiting", type=int, default=300)
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1"
    )
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    from airflow_quota_provider.hooks.batch import BatchQuotaHook
    from airflow_quota_provider.view.backend import BatchBackend

    with local_endpoint(config=QUEUE, time_scale=0) as url:
        os.environ["AWS_ENDPOINT_URL"] = url
        batch = client(url)
        for n in range(32 + args.waiting):
            batch.submit_service_job(
                jobName=f"j{n}",
                jobQueue="bench",
                quotaShareName="ab"[n % 2],
                serviceJobType="SAGEMAKER_TRAINING",
                serviceRequestPayload=PAYLOAD,
                tags={"emulator:duration-seconds": "36000"},
            )
        urllib.request.urlopen(
            urllib.request.Request(
                f"{url}/_emulator/clock", data=b'{"advance_seconds": 60}', method="POST"
            )
        ).close()
        cold, warm, spent = [], [], 0
        for _ in range(args.repeat):
            backend = BatchBackend(BatchQuotaHook(aws_conn_id=None))
            backend.hook.conn  # noqa: B018 - the client is made outside the timing
            before = calls(url)
            start = time.perf_counter()
            view = backend.queue("bench")
            cold.append(time.perf_counter() - start)
            spent = calls(url) - before
            start = time.perf_counter()
            backend.queue("bench")
            warm.append(time.perf_counter() - start)
    print(f"queue: {len(view.running)} running, {len(view.waiting)} waiting")
    print(f"cold read: {statistics.median(cold):.3f} s median of {args.repeat}")
    print(f"AWS calls per cold read: {spent}")
    print(f"cached read: {statistics.median(warm) * 1e6:.0f} us median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
