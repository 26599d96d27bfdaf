"""What a service job's watcher says and ends with, from DescribeServiceJob answers."""

from __future__ import annotations

from typing import Any

from airflow_quota_provider.triggers.progress import JobWatch

REASON = "RECLAIM: share nlp reclaims 1 ml.p4d.24xlarge"


def preempted_job(status_reason: str | None) -> dict[str, Any]:
    return {
        "jobId": "j1",
        "status": "RUNNABLE",
        "statusReason": status_reason,
        "createdAt": 1_000,
        "attempts": [{"startedAt": 2_000, "stoppedAt": 5_000}],
        "preemptionSummary": {
            "preemptedAttemptCount": 1,
            "recentPreemptedAttempts": [{"stoppedAt": 5_000, "statusReason": REASON}],
        },
    }


def test_a_stop_at_preemption_gives_the_preemptions_reason_even_before_the_job_has_one() -> None:
    for job_reason in (None, "waiting: NO_IDLE_CAPACITY"):
        _, event = JobWatch("j1", stop_on_preemption=True).observe(preempted_job(job_reason))
        assert event is not None and event["status"] == "preempted"
        assert event["status_reason"] == REASON
        assert event["message"] == f"service job j1 was preempted: {REASON}"


def test_a_watch_that_does_not_stop_at_preemption_waits_on() -> None:
    lines, event = JobWatch("j1").observe(preempted_job(None))
    assert event is None
    assert any(line.endswith("1 preemption(s) so far, retries left: unlimited") for line in lines)
