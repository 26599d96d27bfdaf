"""API calls and triggerer CPU of 500 deferred ServiceJobTriggers on one job queue.

Run: ``.venv/bin/python benchmarks/polling.py [--jobs 500] [--poll-interval 2]
[--time-scale 60] [--owners 50]``

- The endpoint is ``airflow-quota emulator --port 0`` in its own process, so
  its CPU is not the triggerer's. Job queue: 100 ml.p4d.24xlarge, shares
  ``a`` and ``b`` of 50 each, both LEND_AND_BORROW.
- ``--jobs`` service jobs of share ``b`` (one instance, 600..3000 emulated
  seconds, one in 20 failing half-way through) are submitted by a child
  process; ``b`` runs 100 of them at once (50 borrowed from ``a``), the rest
  wait RUNNABLE.
- This process then plays the triggerer: one asyncio loop running every
  trigger as Airflow's triggerer does (``async for event in trigger.run()``).
  After ``--reclaim-round`` rounds a child process submits ``--owners`` jobs
  of share ``a`` (not followed here): they reclaim ``a``'s capacity, so
  about that many of the followed jobs are preempted, wait again and resume.
- After every polling round the calls made in it are read from
  ``GET /_emulator/stats``, with this process's CPU time (all threads, the
  stats request itself excluded). The baseline is one DescribeServiceJob per
  followed job per round. Figures are medians over ``--rounds`` rounds after
  the first (which describes every job once). Then the emulated clock jumps
  ten days, every job ends, and each trigger's one event is checked against
  what its job was meant to do (succeed, or fail half-way).

Exits 1 if the median ratio baseline / calls is below the ``polling_call_reduction``
bound of ``bounds.yaml``, if triggerer CPU per round is over
``polling_cpu_seconds_per_round``, or if any trigger ended wrongly.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bounds import bound
from emulator import PAYLOAD, client

P4D = "ml.p4d.24xlarge"
QUEUE = "bench"
CONFIG = {
    "job_queue": QUEUE,
    "capacity": {P4D: 100},
    "shares": [
        {"name": "a", "capacity": {P4D: 50}, "sharing": "LEND_AND_BORROW"},
        {"name": "b", "capacity": {P4D: 50}, "sharing": "LEND_AND_BORROW"},
    ],
}

# -- the endpoint, in its own process -------------------------------------------------


@contextmanager
def emulator(time_scale: float, directory: Path) -> Iterator[str]:
    config = directory / "quota.json"
    config.write_text(json.dumps(CONFIG))
    command = [sys.executable, "-m", "airflow_quota_provider.cli", "emulator", "--port", "0"]
    command += ["--config", str(config), "--time-scale", str(time_scale)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # serving Batch and SageMaker on http://...
        yield line.split(" on ", 1)[1].split()[0]
    finally:
        process.terminate()
        process.wait(timeout=30)


def stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/_emulator/stats") as response:
        result: dict[str, Any] = json.load(response)
    return result


# -- submitting, in a child process (its CPU is not the triggerer's) -------------------


def submit_jobs(url: str, share: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Submit ``count`` one-instance jobs to ``share``; their ids and what they should end as."""
    batch = client(url)
    draw = random.Random(seed)
    jobs = []
    for n in range(count):
        duration = draw.randrange(600, 3000) if share == "b" else 1200
        tags = {"emulator:duration-seconds": str(duration)}
        fails = share == "b" and n % 20 == 7
        if fails:
            tags["emulator:fail-after-seconds"] = str(duration // 2)
        answer = batch.submit_service_job(
            jobName=f"{share}-{n}",
            jobQueue=QUEUE,
            quotaShareName=share,
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=PAYLOAD,
            tags=tags,
        )
        jobs.append({"job_id": answer["jobId"], "expect": "failed" if fails else "success"})
    return jobs


def submit_command(url: str, share: str, count: int, seed: int) -> list[str]:
    script = str(Path(__file__).resolve())
    return [sys.executable, script, "submit", url, share, str(count), str(seed)]


# -- the triggerer ---------------------------------------------------------------------


@dataclass
class Round:
    followed: int
    calls: Counter[str]
    cpu_seconds: float
    wall_seconds: float


@dataclass
class Run:
    rounds: list[Round] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


async def follow(url: str, jobs: list[dict[str, Any]], args: argparse.Namespace) -> Run:
    from airflow_quota_provider.triggers.batch import ServiceJobTrigger
    from airflow_quota_provider.triggers.poller import poller_for

    triggers = [
        ServiceJobTrigger(
            job_id=job["job_id"],
            job_queue=QUEUE,
            poll_interval=args.poll_interval,
            aws_conn_id=None,
            region_name="us-east-1",
        )
        for job in jobs
    ]
    run = Run()

    async def consume(trigger: ServiceJobTrigger) -> None:
        async for event in trigger.run():
            run.events.append(event.payload)

    consumers = [asyncio.create_task(consume(t)) for t in triggers]
    await asyncio.sleep(0)  # every trigger follows its job before the first round ends
    poller = poller_for((QUEUE, "us-east-1", None), triggers[0].batch_hook)
    sampler = asyncio.create_task(sample(url, poller, run, args))
    await asyncio.gather(sampler, *consumers)
    return run


async def sample(url: str, poller: Any, run: Run, args: argparse.Namespace) -> None:
    """After every polling round: the calls made in it and the CPU this process spent.

    After ``--rounds`` rounds the emulated clock jumps ten days ahead, so every
    job ends soon and each trigger's event can be checked (not measured).
    """
    seen, followed = poller.rounds, poller.followed
    before = time.process_time()
    before_calls = _calls(await asyncio.to_thread(stats, url))
    overhead = time.process_time() - before
    wall = time.perf_counter()
    while len(run.rounds) <= args.rounds:
        await asyncio.sleep(args.poll_interval / 20)
        if poller.rounds == seen:
            continue
        seen = poller.rounds
        cpu, now = time.process_time(), time.perf_counter()
        calls = _calls(await asyncio.to_thread(stats, url))
        run.rounds.append(
            Round(followed, calls - before_calls, cpu - before - overhead, now - wall)
        )
        overhead = time.process_time() - cpu
        before, before_calls, wall, followed = cpu, calls, now, poller.followed
        if seen == args.reclaim_round:
            command = submit_command(url, "a", args.owners, args.seed + 1)
            await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.DEVNULL)
    await asyncio.to_thread(advance, url, 10 * 86400)


def advance(url: str, seconds: float) -> None:
    data = json.dumps({"advance_seconds": seconds}).encode()
    request = urllib.request.Request(f"{url}/_emulator/clock", data=data, method="POST")
    with urllib.request.urlopen(request):
        pass


def _calls(snapshot: dict[str, Any]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for operation, outcomes in snapshot["operations"].items():
        name = operation.split(".", 1)[1]
        if name != "SubmitServiceJob":  # made by the submitting children, not the triggerer
            counts[name] = sum(outcomes.values())
    return counts


@contextmanager
def to_file(path: Path) -> Iterator[None]:
    """Standard output and error into ``path``, as a triggerer writes its triggers' logs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with path.open("a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)


# -- the report ------------------------------------------------------------------------


def report(run: Run, jobs: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """Print the figures; the problems found (wrong endings, bounds exceeded)."""
    steady = [r for r in run.rounds[1:] if r.followed]
    calls = [sum(r.calls.values()) for r in steady]
    ratio = statistics.median(r.followed / max(1, sum(r.calls.values())) for r in steady)
    cpu = statistics.median(r.cpu_seconds for r in steady)
    print(
        f"{len(jobs)} triggers, poll interval {args.poll_interval:g} s, "
        f"time scale {args.time_scale:g}, {args.owners} reclaiming owner jobs"
    )
    followed = [r.followed for r in steady]
    rows = [
        ("rounds measured (after the first)", f"{len(steady)}"),
        ("followed jobs per round = baseline calls", f"{min(followed)}..{max(followed)}"),
        ("API calls per round, median", f"{statistics.median(calls):.0f}"),
        ("  min..max", f"{min(calls)}..{max(calls)}"),
        ("baseline / calls, median", f"{ratio:.1f}x"),
        ("first round calls (describes every job)", f"{sum(run.rounds[0].calls.values())}"),
        ("triggerer CPU per round, median", f"{cpu * 1000:.0f} ms"),
        ("  max", f"{max(r.cpu_seconds for r in steady) * 1000:.0f} ms"),
        (
            "triggerer CPU, % of one core, median",
            f"{statistics.median(r.cpu_seconds / r.wall_seconds for r in steady):.1%}",
        ),
        (
            "round period (interval + round), median",
            f"{statistics.median(r.wall_seconds for r in steady):.2f} s",
        ),
        ("jobs preempted at least once", f"{sum(1 for e in run.events if e['preemptions'])}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value:>10}")
    by_operation = sum((r.calls for r in steady), Counter[str]())
    mean = ", ".join(f"{op} {n / len(steady):.1f}" for op, n in by_operation.most_common())
    print(f"calls per round by operation, mean: {mean}")
    problems = check_events(run, jobs)
    if ratio < bound("polling_call_reduction"):
        problems.append(f"call reduction {ratio:.1f}x is below the bound")
    if cpu > bound("polling_cpu_seconds_per_round"):
        problems.append(f"CPU per round {cpu:.3f} s is over the bound")
    return problems


def check_events(run: Run, jobs: list[dict[str, Any]]) -> list[str]:
    problems = []
    got = Counter(e["job_id"] for e in run.events)
    if set(got) != {j["job_id"] for j in jobs} or max(got.values()) != 1:
        problems.append("not every trigger fired exactly one event")
    ended = {e["job_id"]: e["status"] for e in run.events}
    wrong = [j["job_id"] for j in jobs if ended.get(j["job_id"]) != j["expect"]]
    if wrong:
        problems.append(f"{len(wrong)} jobs ended otherwise than expected, e.g. {wrong[0]}")
    if not any(e["preemptions"] for e in run.events):
        problems.append("no followed job was preempted")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--poll-interval", type=float, default=2.0)
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument("--owners", type=int, default=50)
    parser.add_argument("--reclaim-round", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20, help="rounds measured")
    parser.add_argument("--seed", type=int, default=1)
    if sys.argv[1:2] == ["submit"]:
        url, share, count, seed = sys.argv[2:6]
        print(json.dumps(submit_jobs(url, share, int(count), int(seed))))
        return 0
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        os.environ.update(
            AIRFLOW_HOME=directory,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_DEFAULT_REGION="us-east-1",
        )
        with emulator(args.time_scale, Path(directory)) as url:
            os.environ["AWS_ENDPOINT_URL"] = url
            command = submit_command(url, "b", args.jobs, args.seed)
            jobs = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
            args.log = Path(directory) / "triggers.log"
            with to_file(args.log):
                run = asyncio.run(follow(url, jobs, args))
            lines = len(args.log.read_text().splitlines())
        problems = report(run, jobs, args)
        print(f"trigger log lines written: {lines}")
    for problem in problems:
        print(f"FAIL: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
