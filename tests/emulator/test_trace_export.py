"""``airflow-quota trace export`` against the local endpoint over HTTP, then replayed."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from airflow_quota_provider.core.config import config_to_dict
from airflow_quota_provider.simulation.traces import read_trace
from tests.emulator.conftest import (
    P4D,
    QUEUE,
    TWO_SHARES,
    Endpoint,
    status,
    submit,
    training_payload,
)


def export(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "trace", "export",
         "--job-queue", QUEUE, "--endpoint-url", url, "--region", "us-east-1", *args],
        capture_output=True,
        text=True,
        check=False,
        env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "PATH": ""},
    )  # fmt: skip


def rows_of(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as file:
        return {row["id"]: row for row in csv.DictReader(file)}


def test_finished_jobs_become_rows_and_a_job_that_never_ran_is_counted(
    endpoint: Endpoint, tmp_path: Path
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


def test_an_unknown_queue_is_an_error_naming_it(endpoint: Endpoint) -> None:
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


def _borrower(endpoint: Endpoint, name: str, work: float, **checkpoint: Any) -> str:
    """vision's job of all 4 p4d (2 borrowed from nlp), checkpointing to its own URI
    if ``checkpoint`` names an interval tag or ``uri=True``."""
    extra: dict[str, Any] = {}
    tags = {}
    if checkpoint:
        extra["CheckpointConfig"] = {"S3Uri": f"s3://bucket/checkpoints/{name}"}
        if "interval" in checkpoint:
            tags["emulator:checkpoint-interval-seconds"] = str(checkpoint["interval"])
    payload = training_payload(4, **extra)
    return submit(endpoint.batch, "vision", name=name, duration=work, payload=payload, tags=tags)


def _reclaimed_after(endpoint: Endpoint, job: str, trained: float, nlp_work: float) -> str:
    """Let ``job`` (just submitted) train ``trained`` s, then have nlp reclaim its 2 p4d
    for a job of ``nlp_work`` s; returns when ``job`` has stopped, nlp's job scheduled."""
    endpoint.advance(1 + 4 + 2 + trained)  # dispatched after 1 s; starting and downloading
    reclaimer = submit(endpoint.batch, "nlp", 2, name=f"nlp-{nlp_work:g}", duration=nlp_work)
    endpoint.advance(1)  # nlp's job enters the queue and reclaims; the borrower stops in 2 s
    endpoint.advance(2)
    assert (status(endpoint.batch, job), status(endpoint.batch, reclaimer)) == (
        "RUNNABLE",
        "SCHEDULED",
    )
    return reclaimer


def test_each_exported_job_does_the_work_it_really_did_and_a_replay_runs_it(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    batch = endpoint.batch
    # each borrower is reclaimed while training, resumes from its checkpoint (none: from
    # scratch) once nlp's job is done, and succeeds; an attempt holds its instances for
    # 8 s of start-up and upload besides its training, and 2 s more to stop
    tagged = _borrower(endpoint, "tagged", 1000, interval=300)
    first = _reclaimed_after(endpoint, tagged, 400, 100)  # 401 s trained: 300 s saved
    endpoint.advance(4 + 2 + 100 + 2 + 4 + 2 + 700 + 2)
    default = _borrower(endpoint, "default", 800, uri=True)  # the endpoint's 300 s
    second = _reclaimed_after(endpoint, default, 650, 50)  # 651 s trained: 600 s saved
    endpoint.advance(4 + 2 + 50 + 2 + 4 + 2 + 200 + 2)
    scratch = _borrower(endpoint, "scratch", 200)  # no checkpoint: all 101 s lost
    third = _reclaimed_after(endpoint, scratch, 100, 20)
    endpoint.advance(4 + 2 + 20 + 2 + 4 + 2 + 200 + 2)
    assert [status(batch, job) for job in (tagged, first, default, second, scratch, third)] == [
        "SUCCEEDED"
    ] * 6
    assert [
        len(batch.describe_service_job(jobId=job)["attempts"]) for job in (tagged, default, scratch)
    ] == [2, 2, 2]
    # cut short: terminated after 100 s, failed after 50 s of training; one still runs
    terminated = submit(batch, "nlp", 2, name="terminated", duration=1000)
    failing = submit(batch, "vision", 2, name="failing", duration=1000,
                     tags={"emulator:fail-after-seconds": "50"})  # fmt: skip
    endpoint.advance(1 + 100)
    batch.terminate_service_job(jobId=terminated, reason="not needed")
    endpoint.advance(2)
    running = submit(batch, "nlp", 1, name="running", duration=10_000)
    endpoint.advance(1)
    assert [status(batch, job) for job in (terminated, failing, running)] == [
        "FAILED", "FAILED", "SCHEDULED"
    ]  # fmt: skip

    output = tmp_path / "trace.csv"
    done = export(endpoint.url, "--since", "1h", "--output", str(output))
    assert done.returncode == 0, done.stderr
    # terminated held 2 p4d for 102 s (to its stop), failing 2 p4d for 4 + 2 + 50 s
    assert done.stderr.strip() == (
        f"exported 6 jobs of {QUEUE}; left out 3: 1 not finished yet (the work it needs is "
        "not known yet), 1 terminated (the work it needed is not known), 1 that failed (the "
        f"work it needed is not known); those held 5m 16s of {P4D} instance time, not in "
        "the trace"
    )
    rows = rows_of(output)
    # the work each job did, what it needed had nothing interrupted it: its training,
    # and 8 s of start-up and upload (the last attempt alone ran 708, 208 and 208 s)
    assert {job: (rows[job]["duration_seconds"], rows[job]["checkpoint_interval_seconds"])
            for job in rows} == {
        tagged: ("1008", "300"), first: ("108", ""),
        default: ("808", "300"), second: ("58", ""),
        scratch: ("208", ""), third: ("28", ""),
    }  # fmt: skip

    config = tmp_path / "quota.yaml"
    config.write_text(yaml.safe_dump(config_to_dict(TWO_SHARES)))
    replayed = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "simulate", "--config", str(config),
         "--trace", str(output), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    jobs = json.loads(replayed.stdout)["jobs"]
    # reclaimed again in the replay (at the same moments, with checkpoints every 300 s);
    # each job's run less the work its preemptions lost is the work it did on the endpoint
    assert {job: data["preemptions"] for job, data in jobs.items()} == {
        tagged: 1, first: 0, default: 1, second: 0, scratch: 1, third: 0
    }  # fmt: skip
    for job, data in jobs.items():
        count = int(rows[job]["count"])
        ran = sum(a["end"] - a["start"] for a in data["attempts"])
        lost = sum(a.get("work_lost_unit_seconds", 0) for a in data["attempts"]) / count
        assert (data["status"], round(ran - lost, 3)) == (
            "SUCCEEDED",
            float(rows[job]["duration_seconds"]),
        ), job
