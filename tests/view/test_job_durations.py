"""How long each job of an AWS Batch queue will run, from the jobs one read of it holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_quota_provider.aws_batch.durations import job_durations
from airflow_quota_provider.core.durations import NO_HISTORY, DurationEstimate

FEW = "(range: half to twice the median, too few runs for percentiles)"
NOW = 10_000_000


def job(job_id: str, status: str, *, name: str = "train", **fields: Any) -> dict[str, Any]:
    return {"jobId": job_id, "jobName": name, "status": status, **fields}


def done(job_id: str, seconds: float, **fields: Any) -> dict[str, Any]:
    """A SUCCEEDED job that held its capacity ``seconds`` (its attempt's start to its stop)."""
    attempt = {"startedAt": 1_000_000, "stoppedAt": 1_000_000 + int(seconds * 1000)}
    return job(job_id, "SUCCEEDED", attempts=[attempt], stoppedAt=attempt["stoppedAt"], **fields)


def bound(seconds: int) -> str:
    return json.dumps({"StoppingCondition": {"MaxRuntimeInSeconds": seconds}})


CASES = {
    "earlier runs of the same name": (
        [done("a", 300), done("b", 600), done("c", 900), job("w", "RUNNABLE")],
        {"w": DurationEstimate(600, 300, 1200, f"median of 3 earlier runs {FEW}")},
    ),
    "another name's runs do not count: a guess": (
        [done("a", 300), job("w", "RUNNABLE", name="other")],
        {"w": NO_HISTORY},
    ),
    "a preempted run does not count": (
        [
            done("a", 300, preemptionSummary={"preemptedAttemptCount": 1}),
            job("w", "RUNNABLE"),
        ],
        {"w": NO_HISTORY},
    ),
    "the request's max runtime bounds it": (
        [done("a", 300), done("b", 600), job("w", "RUNNABLE", serviceRequestPayload=bound(500))],
        {
            "w": DurationEstimate(
                300,
                150,
                500,
                f"median of 2 earlier runs {FEW}; at most 500 s (its max runtime)",
                max_runtime=500,
            )
        },
    ),
    # r has held its capacity 400 s: a run still running (the forecast takes it past that)
    "a job holding capacity counts as a run still running": (
        [
            done("a", 300),
            done("b", 600),
            done("c", 900),
            job("r", "RUNNING", attempts=[{"startedAt": NOW - 400_000}]),
        ],
        {
            "r": DurationEstimate(
                600, 300, 1200, f"median of 3 earlier runs and 1 still running {FEW}"
            )
        },
    ),
}


@pytest.mark.parametrize(("jobs", "want"), CASES.values(), ids=CASES.keys())
def test_job_durations(jobs: list[dict[str, Any]], want: dict[str, DurationEstimate]) -> None:
    assert job_durations(jobs, NOW) == want
