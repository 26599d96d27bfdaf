"""AWS's answers turned into a usage history: hand-written ``DescribeServiceJob`` answers in,
the core's records out. Times are seconds after T0; every expectation is worked by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_quota_provider.aws_batch.history import (
    Span,
    attempts_of,
    job_demand,
    preemptions_of,
    rebuild,
    spans_of,
    starts_of,
)
from airflow_quota_provider.core.history import Change, Figures, JobStart, PreemptionRecord
from airflow_quota_provider.core.reasons import PREEMPTION_HEADLINES, PreemptionKind
from tests.core.builders import queue, share

T0 = 1_795_996_800_000
"""2026-11-30 00:00:00 UTC, in epoch milliseconds."""
RECLAIM = PREEMPTION_HEADLINES[PreemptionKind.RECLAIM]
IN_SHARE = PREEMPTION_HEADLINES[PreemptionKind.IN_SHARE]
CONFIG = queue(
    share("nlp").capacity(gpu=4).lend_and_borrow(),
    share("cv").capacity(gpu=4).lend_and_borrow().in_share_preemption(),
    gpu=8,
)


def ms(seconds: int) -> int:
    return T0 + seconds * 1000


def attempt(start: int, stop: int | None = None, reason: str | None = None) -> dict[str, Any]:
    return {
        "serviceResourceId": {"name": "TrainingJobArn", "value": f"arn:tj/{start}"},
        "startedAt": ms(start),
        "stoppedAt": None if stop is None else ms(stop),
        "statusReason": reason,
    }


def job(
    job_id: str,
    share_name: str,
    gpu: int,
    created: int,
    *attempts: dict[str, Any],
    status: str = "SUCCEEDED",
    recent: int | None = None,
    checkpoint: int | None = None,
) -> dict[str, Any]:
    """A described job; ``recent``: how many of its last preempted attempts AWS still lists
    in ``preemptionSummary`` (all of them by default)."""
    preempted = [a for a in attempts if "preemption" in str(a.get("statusReason"))]
    listed = preempted if recent is None else preempted[len(preempted) - recent :]
    payload: dict[str, Any] = {"ResourceConfig": {"InstanceType": "gpu", "InstanceCount": gpu}}
    tags = {}
    if checkpoint is not None:
        payload["CheckpointConfig"] = {"S3Uri": f"s3://bucket/{job_id}"}
        tags["emulator:checkpoint-interval-seconds"] = str(checkpoint)
    return {
        "jobId": job_id,
        "jobName": job_id,
        "quotaShareName": share_name,
        "capacityUsage": [{"capacityUnit": "gpu", "quantity": float(gpu)}],
        "createdAt": ms(created),
        "status": status,
        "attempts": list(attempts),
        "preemptionSummary": {
            "preemptedAttemptCount": len(preempted),
            "recentPreemptedAttempts": listed,
        }
        if preempted
        else None,
        "serviceRequestPayload": json.dumps(payload),
        "tags": tags,
    }


def test_a_preempted_job_waits_holds_waits_and_holds_again() -> None:
    c1 = job("c1", "cv", 6, 0, attempt(60, 660, f"{RECLAIM}: ..."), attempt(1860), status="RUNNING")
    gpu6 = {"gpu": 6}
    assert spans_of(c1, until=ms(7200)) == [
        Span(ms(0), ms(60), False, "cv", "c1", gpu6),
        Span(ms(60), ms(660), True, "cv", "c1", gpu6),
        Span(ms(660), ms(1860), False, "cv", "c1", gpu6),
        Span(ms(1860), ms(7200), True, "cv", "c1", gpu6),
    ]
    assert starts_of(c1, until=ms(7200)) == [
        JobStart(ms(60), "cv", "c1", gpu6, 1, ms(0)),
        JobStart(ms(1860), "cv", "c1", gpu6, 2, ms(660)),
    ]


@pytest.mark.parametrize(
    ("described", "until", "expected"),
    [
        pytest.param(
            {"jobId": "j", "scheduledAt": ms(10), "startedAt": ms(16), "stoppedAt": ms(70)},
            ms(100),
            [(ms(10), ms(70))],
            id="a summary without attempts holds from scheduledAt to stoppedAt",
        ),
        pytest.param(
            {"jobId": "j", "scheduledAt": ms(10), "status": "RUNNING"},
            ms(100),
            [(ms(10), ms(100))],
            id="a summary still running holds until the window's end",
        ),
        pytest.param(
            {"jobId": "j", "status": "RUNNABLE", "attempts": None},
            ms(100),
            [],
            id="a job that never started has no attempt",
        ),
        pytest.param(
            {"jobId": "j", "attempts": [attempt(10, 500)]},
            ms(100),
            [(ms(10), ms(100))],
            id="an attempt past the window's end is cut at it",
        ),
    ],
)
def test_attempts_as_aws_lists_them(
    described: dict[str, Any], until: int, expected: list[tuple[int, int]]
) -> None:
    assert attempts_of(described, until) == expected


def test_a_job_waiting_again_waits_until_the_window_ends() -> None:
    c1 = job("c1", "cv", 6, 0, attempt(60, 660, f"{RECLAIM}: ..."), status="RUNNABLE")
    assert spans_of(c1, until=ms(1000))[-1] == Span(
        ms(660), ms(1000), False, "cv", "c1", {"gpu": 6}
    )


def test_a_failed_job_does_not_wait_after_its_last_attempt() -> None:
    failed = job("f", "cv", 2, 0, attempt(5, 50, "Received status from SageMaker: failed"))
    failed["status"] = "FAILED"
    assert [s.holds for s in spans_of(failed, until=ms(100))] == [False, True]


def test_demand_from_the_request_when_aws_reports_no_usage() -> None:
    waiting = job("w", "nlp", 3, 0, status="RUNNABLE")
    waiting["capacityUsage"] = None
    assert job_demand(waiting) == {"gpu": 3}
    waiting["serviceRequestPayload"] = "not json"
    assert job_demand(waiting) == {}


def test_preemptions_name_kind_preemptor_and_work_lost() -> None:
    n1 = job("n1", "nlp", 4, 600, attempt(660, 1860))
    reason = (
        f"{RECLAIM}: share cv borrows 2 gpu (uses 6, owns 4); share nlp reclaims it for "
        "job n1, which needs 4 gpu within what its share owns"
    )
    c1 = job("c1", "cv", 6, 0, attempt(60, 660, reason), attempt(1860), checkpoint=500)
    # ran 600 s, checkpointed at 500: 100 s lost on each of its 6 gpu
    assert preemptions_of(c1, {"n1": n1, "c1": c1}) == [
        PreemptionRecord(ms(660), "RECLAIM", "cv", "c1", {"gpu": 6}, "nlp", "n1", 100.0)
    ]


def test_an_older_preempted_attempt_aws_no_longer_summarises_is_read_from_attempts() -> None:
    c1 = job(
        "c1",
        "cv",
        6,
        0,
        attempt(60, 660, f"{RECLAIM}: for job n1"),
        attempt(1860, 2460, f"{IN_SHARE}: for job c3"),
        attempt(3600),
        status="RUNNING",
        recent=1,
    )
    records = preemptions_of(c1, {})
    # no checkpoints: the whole run of each attempt is lost
    assert [(r.at, r.kind, r.preemptor, r.seconds_lost) for r in records] == [
        (ms(660), "RECLAIM", "n1", 600.0),
        (ms(2460), "IN_SHARE", "c3", 600.0),
    ]


def test_rebuilt_changes_of_a_reclaim() -> None:
    # c1 (cv, 6 gpu) runs 60-660, borrowing 2 of nlp's; n1 (nlp, 4) waits 600-660 and runs
    # 660-1860 while c1 waits; the window is 0-1000
    n1 = job("n1", "nlp", 4, 600, attempt(660, 1860))
    c1 = job("c1", "cv", 6, 0, attempt(60, 660, f"{RECLAIM}: for job n1"), attempt(1860))
    history = rebuild(CONFIG, [c1, n1], ms(0), ms(1000))
    # owned, own_use, borrowed, lent, idle, waiting, waiting_jobs
    assert [c for c in history.changes if c.share == "cv"] == [
        Change(ms(0), "cv", "gpu", Figures(4, 0, 0, 0, 4, 6, 1)),
        Change(ms(60), "cv", "gpu", Figures(4, 4, 2, 0, 0, 0, 0)),
        Change(ms(660), "cv", "gpu", Figures(4, 0, 0, 0, 4, 6, 1)),
    ]
    assert [c for c in history.changes if c.share == "nlp"] == [
        Change(ms(0), "nlp", "gpu", Figures(4, 0, 0, 0, 4, 0, 0)),
        Change(ms(60), "nlp", "gpu", Figures(4, 0, 0, 2, 2, 0, 0)),
        Change(ms(600), "nlp", "gpu", Figures(4, 0, 0, 2, 2, 4, 1)),
        Change(ms(660), "nlp", "gpu", Figures(4, 4, 0, 0, 0, 0, 0)),
    ]
    assert history.end == ms(1000)
    # c1's second start (1860) is after the window: not told
    assert [(s.job_id, s.attempt, s.wait) for s in history.starts] == [
        ("c1", 1, 60_000),
        ("n1", 1, 60_000),
    ]


@pytest.mark.parametrize(
    ("victim_gpu", "kind"),
    [
        pytest.param(6, "RECLAIM", id="its share borrowed just before: a reclaim"),
        pytest.param(4, "IN_SHARE", id="its share ran within what it owns: in-share"),
    ],
)
def test_a_reason_without_a_known_headline_is_read_from_the_history(
    victim_gpu: int, kind: str
) -> None:
    # AWS's own wording of a preemption is not this provider's headline
    c1 = job("c1", "cv", victim_gpu, 0, attempt(60, 660, "Preempted"), status="RUNNABLE")
    c1["preemptionSummary"] = {
        "preemptedAttemptCount": 1,
        "recentPreemptedAttempts": [attempt(60, 660, "Preempted")],
    }
    [record] = rebuild(CONFIG, [c1], ms(0), ms(1000)).preemptions
    assert (record.kind, record.preemptor, record.preemptor_share) == (kind, None, None)


def test_a_job_that_ended_before_the_window_counts_nothing() -> None:
    old = job("old", "cv", 2, 0, attempt(10, 100))
    history = rebuild(CONFIG, [old], ms(200), ms(300))
    assert [c.figures for c in history.changes if c.share == "cv"] == [Figures(4, 0, 0, 0, 4)]
    assert history.preemptions == ()
