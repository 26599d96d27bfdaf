"""``airflow-quota status``, ``explain`` and ``events`` as users run them: real subprocesses
reading a queue the local endpoint populated (``AWS_ENDPOINT_URL`` in their environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.emulator.conftest import G5, P4D, QUEUE, Endpoint
from tests.view.conftest import Story

pytestmark = pytest.mark.usefixtures("aws_env")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_status_prints_a_table_per_share_with_jobs(story: Story) -> None:
    done = run("status", "--job-queue", QUEUE)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\033[" not in out  # no colour when not on a terminal
    lines = out.splitlines()
    assert lines[0].startswith(f"job queue {QUEUE} (ENABLED) at ")
    share = lines.index(
        "share nlp: LEND_AND_BORROW, borrow limit unlimited, ENABLED; 2 running, 0 waiting"
    )
    assert lines[share + 1].split() == [
        "UNIT",
        "OWNED",
        "USED",
        "OWN",
        "BORROWED",
        "LENT",
        "IDLE",
        "LIMIT",
    ]
    assert lines[share + 2].split() == [G5, "0", "2", "0", "2", "0", "0", "4"]
    assert lines[share + 3].split() == [P4D, "2", "2", "2", "0", "0", "0", "4"]
    waiting = [line for line in lines if line.startswith("  waiting #1 v2")]
    assert len(waiting) == 1 and "NO_IDLE_CAPACITY: vision needs 2" in waiting[0]
    victim = [line for line in lines if f"n2 ({story.n2}" in line]
    assert victim and "borrowing, next victim if vision reclaims (RECLAIM)" in victim[0]


def test_status_json_for_scripts(story: Story) -> None:
    done = run("status", "--json")
    assert done.returncode == 0, done.stderr
    [queue] = json.loads(done.stdout)
    assert queue["name"] == QUEUE
    assert [job["job_id"] for job in queue["waiting"]] == [story.v2]
    assert {s["name"]: s["waiting"] for s in queue["shares"]} == {"nlp": 0, "vision": 1}


def test_explain_a_preempted_waiting_job(story: Story) -> None:
    done = run("explain", story.v2)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{story.v2} waits for 2 {P4D} in share vision: NO_IDLE_CAPACITY")
    assert any(
        "preempted at" in line and f"reclaims it for job {story.n1}" in line for line in lines
    )
    assert (
        f"  AWS console: https://console.aws.amazon.com/batch/home?region=us-east-1#service-jobs/detail/{story.v2}"
        in lines
    )


def test_events_lists_who_by_whom_why(story: Story) -> None:
    done = run("events")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split()[:5] == ["WHEN", "JOB", "SHARE", "KIND", "BY"]
    assert f"v2 ({story.v2})" in row and f"RECLAIM  n1 ({story.n1})" in row


def test_unknown_queue_and_job_exit_1_saying_what_exists(story: Story) -> None:
    done = run("status", "--job-queue", "nope")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: job queue 'nope' does not exist; the job queues are: {QUEUE}\n"
    done = run("explain", "no-such-job")
    assert (done.returncode, done.stderr) == (
        1,
        f"error: service job 'no-such-job' does not exist: no job of job queue {QUEUE} has "
        "that id, ARN or name\n",
    )


def test_an_unreachable_endpoint_is_an_error_not_a_trace(story: Story) -> None:
    done = run("status", env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"})
    assert done.returncode == 1
    assert done.stderr.startswith("error: DescribeJobQueues failed (EndpointConnectionError): ")


def test_status_without_queues_says_so(bare_endpoint: Endpoint) -> None:
    done = run("status", env={"AWS_ENDPOINT_URL": bare_endpoint.url})
    assert (done.returncode, done.stdout) == (0, "no SageMaker training job queues\n")
