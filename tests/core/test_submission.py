"""Jobs that could never run are refused at submission, each with its own code and message."""

from __future__ import annotations

import pytest

from airflow_quota_provider.core import WaitingJob, check_submission
from tests.core.builders import queue, share

config = queue(
    share("nlp").capacity(gpu=4, cpu=2).lend_and_borrow(limit=50),
    share("research").capacity(gpu=2).lend(),
    share("old").capacity(gpu=1).disabled(),
    share("open").capacity(gpu=1).lend_and_borrow(),
    gpu=8,
    cpu=4,
)

REFUSED = {
    "an unknown share": (
        WaitingJob("j", "vision", {"gpu": 1}),
        "UNKNOWN_SHARE",
        "share vision does not exist in job queue q; its shares are nlp, research, old, open",
    ),
    "a disabled share": (
        WaitingJob("j", "old", {"gpu": 1}),
        "SHARE_DISABLED",
        "share old is DISABLED and accepts no new jobs",
    ),
    "a priority above 9999": (
        WaitingJob("j", "nlp", {"gpu": 1}, priority=10000),
        "INVALID_PRIORITY",
        "priority must be an integer from 0 to 9999 (higher runs first), got 10000",
    ),
    "a negative priority": (
        WaitingJob("j", "nlp", {"gpu": 1}, priority=-1),
        "INVALID_PRIORITY",
        "priority must be an integer from 0 to 9999 (higher runs first), got -1",
    ),
    "an empty demand": (
        WaitingJob("j", "nlp", {}),
        "INVALID_DEMAND",
        "demand must name at least one unit, each with a count of at least 1; got {}",
    ),
    "a zero count": (
        WaitingJob("j", "nlp", {"gpu": 0}),
        "INVALID_DEMAND",
        "demand must name at least one unit, each with a count of at least 1; got {'gpu': 0}",
    ),
    "a unit the queue does not have": (
        WaitingJob("j", "nlp", {"tpu": 1}),
        "UNKNOWN_UNIT",
        "job queue q has no tpu; it has cpu, gpu",
    ),
    "more than the queue has": (
        WaitingJob("j", "open", {"gpu": 9}),
        "EXCEEDS_QUEUE_CAPACITY",
        "the job needs 9 gpu; job queue q has 8",
    ),
    "more than the borrow limit allows": (
        WaitingJob("j", "nlp", {"gpu": 7}),
        "EXCEEDS_MAX_QUOTA",
        "the job needs 7 gpu; share nlp may hold at most 6 (owns 4, borrow_limit 50%)",
    ),
    "more than a LEND share owns": (
        WaitingJob("j", "research", {"gpu": 3}),
        "EXCEEDS_MAX_QUOTA",
        "the job needs 3 gpu; share research may hold at most 2 (owns 2, LEND does not borrow)",
    ),
    "a unit a LEND share does not own": (
        WaitingJob("j", "research", {"cpu": 1}),
        "EXCEEDS_MAX_QUOTA",
        "the job needs 1 cpu; share research may hold at most 0 (owns 0, LEND does not borrow)",
    ),
}


@pytest.mark.parametrize(("job", "code", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_refused(job: WaitingJob, code: str, message: str) -> None:
    refusal = check_submission(config, job)
    assert refusal is not None
    assert (refusal.code.value, refusal.message) == (code, message)


ACCEPTED = {
    "within the share's own capacity": WaitingJob("j", "nlp", {"gpu": 4}),
    "up to the borrow limit": WaitingJob("j", "nlp", {"gpu": 6, "cpu": 3}),
    "an unlimited borrower up to the whole queue": WaitingJob("j", "open", {"gpu": 8}),
    "the highest priority": WaitingJob("j", "nlp", {"gpu": 1}, priority=9999),
}


@pytest.mark.parametrize("job", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_accepted(job: WaitingJob) -> None:
    assert check_submission(config, job) is None
