"""Service jobs as described by DescribeServiceJob, turned into trace rows."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from airflow_quota_provider.checkpoints import described_interval
from airflow_quota_provider.simulation.trace_export import export_jobs, work_done


def job(job_id: str, created: int, **extra: object) -> dict[str, object]:
    return {
        "jobId": job_id,
        "createdAt": created,
        "status": "SUCCEEDED",
        "quotaShareName": "nlp",
        "schedulingPriority": 3,
        "capacityUsage": [{"capacityUnit": "gpu", "quantity": 2.0}],
        "attempts": [{"startedAt": created + 500, "stoppedAt": created + 1750}],
        **extra,
    }


def attempts(*runs: float) -> list[dict[str, int]]:
    """Attempts back to back that ran ``runs`` seconds each."""
    made, start = [], 0
    for run in runs:
        made.append({"startedAt": start, "stoppedAt": start + round(run * 1000)})
        start += round(run * 1000) + 60_000
    return made


def checkpointing(interval: str | None = None, *, payload_tag: bool = False) -> dict[str, Any]:
    tag = [] if interval is None else [("emulator:checkpoint-interval-seconds", interval)]
    payload: dict[str, Any] = {"CheckpointConfig": {"S3Uri": "s3://b/c"}}
    if payload_tag:
        payload["Tags"] = [{"Key": k, "Value": v} for k, v in tag]
    return {
        "serviceRequestPayload": json.dumps(payload),
        "tags": None if payload_tag else dict(tag),
    }


def test_rows_in_submission_order() -> None:
    export = export_jobs(
        [
            job("late", 5_000, attempts=[{"startedAt": 6_000, "stoppedAt": 9_500}]),
            job("early", 1_000),
            job("tie", 1_000),
        ]
    )
    assert [(r["id"], r["submit_seconds"], r["duration_seconds"]) for r in export.rows] == [
        ("early", "0", "1.25"),
        ("tie", "0", "1.25"),
        ("late", "4", "3.5"),
    ]
    stream = io.StringIO()
    export.write(stream)
    assert stream.getvalue().splitlines()[:2] == [
        "id,submit_seconds,share,priority,unit,count,duration_seconds,"
        "checkpoint_interval_seconds,preemption_retries",
        "early,0,nlp,3,gpu,2,1.25,,",
    ]


@pytest.mark.parametrize(
    ("runs", "interval", "work"),
    [
        ((700,), None, 700_000),
        # without checkpoints an interrupted attempt keeps nothing: the last run is the work
        ((409, 708), None, 708_000),
        # 409 s kept 300 at the 300 s checkpoint, then 708 s to the end
        ((409, 708), 300.0, 1_008_000),
        # 250 s reach no checkpoint (all lost); 400 s from scratch keep 300; then 50 s
        ((250, 400, 50), 300.0, 350_000),
        # 350 s keep 300; resumed, 350 s more reach 650: 600 kept; then 50 s
        ((350, 350, 50), 300.0, 650_000),
        ((0.5, 1.25), 0.2, 1_650),
    ],
    ids=[
        "one attempt",
        "no checkpoint",
        "checkpointed",
        "all lost once",
        "kept twice",
        "fractions",
    ],
)
def test_work_is_the_last_run_plus_what_earlier_attempts_kept(
    runs: tuple[float, ...], interval: float | None, work: int
) -> None:
    assert work_done(attempts(*runs), interval) == work


def test_the_checkpoint_interval_is_the_tag_or_the_default_when_the_job_checkpoints() -> None:
    assert described_interval(checkpointing("120"), 300.0) == 120.0
    assert described_interval(checkpointing("120", payload_tag=True), 300.0) == 120.0
    assert described_interval(checkpointing(), 300.0) == 300.0
    assert described_interval(checkpointing("soon"), 300.0) == 300.0
    assert described_interval(checkpointing("0"), None) is None
    assert described_interval({"serviceRequestPayload": "{}", "tags": {}}, 300.0) is None
    assert described_interval({"serviceRequestPayload": "not json"}, 300.0) is None


def test_a_checkpointing_job_writes_its_interval_and_the_work_it_kept() -> None:
    described = job("a", 0, attempts=attempts(409, 708), **checkpointing("300"))
    plain = job("b", 0, attempts=attempts(409, 708))
    defaulted = job("c", 0, attempts=attempts(409, 708), **checkpointing())
    export = export_jobs([described, plain, defaulted], default_interval=400)
    assert [(r["duration_seconds"], r["checkpoint_interval_seconds"]) for r in export.rows] == [
        ("1008", "300"),
        ("708", ""),
        ("1108", "400"),
    ]


def test_jobs_that_cannot_be_replayed_are_counted_by_reason_with_the_time_they_held() -> None:
    export = export_jobs(
        [
            job("a", 0, attempts=None),
            job("b", 0, quotaShareName=None),
            job("c", 0, capacityUsage=[]),
            job("d", 0, attempts=[{"startedAt": 10, "stoppedAt": 10}]),
            job("e", 0, attempts=[], status="FAILED", isTerminated=True),
            job("f", 0, attempts=[{"startedAt": 10, "stoppedAt": None}], status="RUNNING"),
            job("g", 0, attempts=attempts(60, 30), status="FAILED", isTerminated=True),
            job("h", 0, attempts=attempts(90), status="FAILED", isTerminated=False),
            job("i", 0, attempts=attempts(120), status="RUNNABLE"),
        ]
    )
    assert export.rows == []
    # b held 2 gpu 1.25 s; g 2 gpu 90 s, h 2 gpu 90 s, i 2 gpu 120 s; f has not stopped
    assert export.summary("q") == (
        "exported 0 jobs of q; left out 9: 2 not finished yet (the work it needs is not "
        "known yet), 2 that never started (no run time to replay), 1 not using exactly one "
        "instance type, 1 terminated (the work it needed is not known), 1 that failed (the "
        "work it needed is not known), 1 whose last attempt ran for no time, 1 without a "
        "quota share; those held 10m 02s of gpu instance time, not in the trace"
    )
    assert export_jobs([]).summary("q") == "exported 0 jobs of q"
