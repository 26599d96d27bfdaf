"""``airflow-quota trace export`` against the local endpoint over HTTP, then replayed."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from airflow_quota_provider.simulation.traces import read_trace
from tests.emulator.conftest import P4D, QUEUE, submit


def export(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "trace", "export",
         "--job-queue", QUEUE, "--endpoint-url", url, "--region", "us-east-1", *args],
        capture_output=True,
        text=True,
        check=False,
        env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "PATH": ""},
    )  # fmt: skip


def test_finished_jobs_become_rows_and_a_job_that_never_ran_is_counted(
    endpoint, tmp_path: Path
) -> None:
    first = submit(endpoint.batch, "nlp", 2, name="a", duration=60, schedulingPriority=5)
    second = submit(
        endpoint.batch, "vision", 2, name="b", duration=100,
        preemptionConfiguration={"preemptionRetriesBeforeTermination": 3},
    )  # fmt: skip
    never = submit(endpoint.batch, "nlp", 4, name="c", duration=10)
    endpoint.batch.terminate_service_job(jobId=never, reason="not needed")
    endpoint.advance(110)
    output = tmp_path / "trace.csv"
    done = export(endpoint.url, "--since", "1h", "--output", str(output))
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == (
        f"exported 2 jobs of {QUEUE}; left out 1: 1 that never started (no run time to replay)"
    )
    # an attempt holds its instances for the training job's 8 s of start-up and upload too
    with open(output, newline="") as file:
        rows = list(csv.DictReader(file))
    rows.sort(key=lambda row: row["id"] != first)
    assert rows == [
        {"id": first, "submit_seconds": "0", "share": "nlp", "priority": "5", "unit": P4D,
         "count": "2", "duration_seconds": "68", "checkpoint_interval_seconds": "",
         "preemption_retries": ""},
        {"id": second, "submit_seconds": rows[1]["submit_seconds"], "share": "vision",
         "priority": "0", "unit": P4D, "count": "2", "duration_seconds": "108",
         "checkpoint_interval_seconds": "", "preemption_retries": "3"},
    ]  # fmt: skip
    assert float(rows[1]["submit_seconds"]) < 1
    assert sorted(job.id for job in read_trace(output).jobs) == sorted([first, second])


def test_an_unknown_queue_is_an_error_naming_it(endpoint) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "trace", "export",
         "--job-queue", "nope", "--endpoint-url", endpoint.url, "--region", "us-east-1"],
        capture_output=True, text=True, check=False,
        env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("error: reading the service jobs of nope: ")


def test_a_bad_since_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "trace", "export",
         "--job-queue", QUEUE, "--since", "a month"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "airflow-quota trace export: error: argument --since: must be a positive duration "
        "such as 30d, 12h, 90m or 600s, got 'a month'"
    )
