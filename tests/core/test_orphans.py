"""Which external jobs no task watches, and when they are due to stop."""

from __future__ import annotations

import pytest

from airflow_quota_provider.core.orphans import ExternalJob, TaskSeen, due_orphans, why_orphaned

TASK = "dag/run/train"
SERVICE = ExternalJob("service job", "job-1", TASK, created=100)
TRY_2 = ExternalJob("training job", "train-t2", TASK, created=100, try_number=2)


@pytest.mark.parametrize(
    ("job", "seen", "reason"),
    [
        (SERVICE, TaskSeen("running", 1), None),
        (SERVICE, TaskSeen("deferred", 3), None),
        (TRY_2, TaskSeen("running", 2), None),
        (
            SERVICE,
            None,
            "its task instance dag/run/train no longer exists (deleted, or its run deleted)",
        ),
        (
            SERVICE,
            TaskSeen("failed", 1),
            "its task instance dag/run/train is failed, so nothing follows the job",
        ),
        (
            SERVICE,
            TaskSeen(None, 2),
            "its task instance dag/run/train is cleared (no state), so nothing follows the job",
        ),
        (
            TRY_2,
            TaskSeen("running", 3),
            "it was started by try 2 of dag/run/train, which is at try 3 now",
        ),
        (
            TRY_2,
            TaskSeen("success", 2),
            "its task instance dag/run/train is success, so nothing follows the job",
        ),
    ],
)
def test_why_a_job_is_an_orphan(job: ExternalJob[str], seen: TaskSeen | None, reason: str) -> None:
    assert why_orphaned(job, seen) == reason


def test_an_orphan_is_due_a_grace_after_its_task_last_moved() -> None:
    failed = {TASK: TaskSeen("failed", 1, moved=500)}
    assert due_orphans([SERVICE], failed, now=559, grace=60) == []
    (due,) = due_orphans([SERVICE], failed, now=560, grace=60)
    assert (due.job, due.since) == (SERVICE, 500)
    assert due.reason.endswith("is failed, so nothing follows the job")


def test_a_gone_task_or_one_that_never_moved_counts_from_the_jobs_creation() -> None:
    assert due_orphans([SERVICE], {}, now=159, grace=60) == []
    assert [o.since for o in due_orphans([SERVICE], {}, now=160, grace=60)] == [100]
    cleared = {TASK: TaskSeen(None, 2)}
    assert [o.since for o in due_orphans([SERVICE], cleared, now=160, grace=60)] == [100]


def test_a_task_that_moved_before_its_job_was_created_counts_from_the_job() -> None:
    queued = {TASK: TaskSeen("queued", 1, moved=20)}
    assert due_orphans([SERVICE], queued, now=150, grace=60) == []


def test_watched_jobs_are_never_due() -> None:
    running = {TASK: TaskSeen("running", 2, moved=0)}
    assert due_orphans([SERVICE, TRY_2], running, now=10_000, grace=0) == []


def test_a_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="grace must be 0 or more seconds, not -1"):
        due_orphans([], {}, now=0, grace=-1)
