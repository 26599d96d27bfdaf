"""Service jobs as described by DescribeServiceJob, turned into trace rows."""

from __future__ import annotations

import io

from airflow_quota_provider.simulation.trace_export import export_jobs


def job(job_id: str, created: int, **extra: object) -> dict[str, object]:
    return {
        "jobId": job_id,
        "createdAt": created,
        "quotaShareName": "nlp",
        "schedulingPriority": 3,
        "capacityUsage": [{"capacityUnit": "gpu", "quantity": 2.0}],
        "attempts": [{"startedAt": created + 500, "stoppedAt": created + 1750}],
        **extra,
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


def test_jobs_that_cannot_be_replayed_are_counted_by_reason() -> None:
    export = export_jobs(
        [
            job("a", 0, attempts=None),
            job("b", 0, quotaShareName=None),
            job("c", 0, capacityUsage=[]),
            job("d", 0, attempts=[{"startedAt": 10, "stoppedAt": 10}]),
            job("e", 0, attempts=[]),
            job("f", 0, attempts=[{"startedAt": 10, "stoppedAt": None}]),
        ]
    )
    assert export.rows == []
    assert export.summary("q") == (
        "exported 0 jobs of q; left out 6: 2 that never started (no run time to replay), "
        "1 without a quota share, 1 not using exactly one instance type, "
        "1 whose last attempt ran for no time, 1 still running (run time not known yet)"
    )
    assert export_jobs([]).summary("q") == "exported 0 jobs of q"
