"""What a share could start now: own idle capacity plus what it may borrow, never what it lent."""

from __future__ import annotations

import pytest

from airflow_quota_provider.core import QueueConfig
from airflow_quota_provider.core.headroom import headroom
from airflow_quota_provider.core.usage import usage_of
from tests.core.builders import queue, running, share

TWO_TEAMS = queue(
    share("nlp").capacity(gpu=4).lend_and_borrow(),
    share("cv").capacity(gpu=4).lend_and_borrow(),
    gpu=8,
)

CASES: list[tuple[str, QueueConfig, dict[str, dict[str, int]], str, dict[str, int]]] = [
    ("an idle fleet: its own and all it may borrow", TWO_TEAMS, {}, "nlp", {"gpu": 8}),
    ("it uses part of its own", TWO_TEAMS, {"nlp": {"gpu": 3}}, "nlp", {"gpu": 5}),
    (
        "capacity it lent out does not count",
        TWO_TEAMS,
        {"cv": {"gpu": 6}},
        "nlp",
        {"gpu": 2},
    ),
    (
        "the borrower may borrow the lender's rest",
        TWO_TEAMS,
        {"cv": {"gpu": 6}},
        "cv",
        {"gpu": 2},
    ),
    ("everything taken", TWO_TEAMS, {"cv": {"gpu": 8}}, "nlp", {"gpu": 0}),
    (
        "a borrow limit caps what it may borrow",
        queue(share("nlp").capacity(gpu=4).lend_and_borrow(limit=50), share("cv").capacity(gpu=4)),
        {},
        "nlp",
        {"gpu": 6},
    ),
    (
        "a RESERVE share's idle capacity is never lent",
        queue(share("nlp").capacity(gpu=4), share("prod").capacity(gpu=4).reserve(), gpu=8),
        {},
        "nlp",
        {"gpu": 4},
    ),
    (
        "a share that only lends borrows nothing",
        queue(share("nlp").capacity(gpu=4), share("cv").capacity(gpu=4).lend(), gpu=8),
        {},
        "cv",
        {"gpu": 4},
    ),
    (
        "capacity no share owns may be borrowed",
        queue(share("nlp").capacity(gpu=4), gpu=6),
        {},
        "nlp",
        {"gpu": 6},
    ),
    (
        "work of a share not in the config takes the unowned capacity",
        queue(share("nlp").capacity(gpu=4), gpu=6),
        {"gone": {"gpu": 1}},
        "nlp",
        {"gpu": 5},
    ),
    (
        "a unit it owns none of, borrowed",
        queue(share("nlp").capacity(gpu=4), share("cv").capacity(gpu=2, tpu=2), gpu=6, tpu=2),
        {},
        "nlp",
        {"gpu": 6, "tpu": 2},
    ),
    ("a share that does not exist", TWO_TEAMS, {}, "robotics", {}),
    (
        "a DISABLED share",
        queue(share("nlp").capacity(gpu=4).disabled(), share("cv").capacity(gpu=4), gpu=8),
        {},
        "nlp",
        {},
    ),
]


@pytest.mark.parametrize(
    ("config", "usage", "name", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_headroom(
    config: QueueConfig, usage: dict[str, dict[str, int]], name: str, expected: dict[str, int]
) -> None:
    assert headroom(config, usage, name) == expected


def test_usage_adds_up_what_running_jobs_hold_per_share_and_unit() -> None:
    jobs = [
        running("a", "nlp", gpu=2),
        running("b", "nlp", gpu=1, tpu=4),
        running("c", "cv", gpu=3),
    ]
    assert usage_of(jobs) == {"nlp": {"gpu": 3, "tpu": 4}, "cv": {"gpu": 3}}
    assert usage_of([]) == {}
