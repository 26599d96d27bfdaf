"""The history of an AWS Batch queue figured with the config in force at each moment: small
hand-worked states, the config's past as apply's tags give it. Times are seconds after T0."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from airflow_quota_provider.aws_batch.change_tags import (
    BEFORE,
    CHANGED_AT,
    CREATED_AT,
    SETTINGS,
    queue_past,
    stamp,
)
from airflow_quota_provider.aws_batch.history import rebuild
from airflow_quota_provider.core.config_timeline import timeline
from airflow_quota_provider.core.history import NAMES, integrate
from tests.core.builders import queue, share
from tests.history.test_aws_history import attempt, job, ms

HOUR = 3600
TODAY = queue(
    share("nlp").capacity(gpu=4).lend_and_borrow(100),
    share("cv").capacity(gpu=4).lend(),
    gpu=8,
)
ENV = {
    "serviceEnvironmentName": "env",
    "capacityLimits": [{"capacityUnit": "gpu", "maxCapacity": 8}],
}
NLP = "gpu=4 strategy=LEND_AND_BORROW borrow=100"
NLP_2 = "gpu=2 strategy=LEND_AND_BORROW borrow=100"
CV = "gpu=4 strategy=LEND"


def at(seconds: int) -> str:
    return stamp(ms(seconds))


def made(seconds: int, settings: str) -> dict[str, str]:
    """The tags apply leaves on what it created at ``seconds``."""
    return {CREATED_AT: at(seconds), SETTINGS: settings}


def raised_at_500(since: str) -> dict[str, str]:
    """nlp's tags once apply raised it from 2 gpu (held since ``since``) to 4 at 500 s."""
    return {
        **made(-HOUR, NLP_2),
        CHANGED_AT: at(500),
        BEFORE: f"since={since} {NLP_2}",
        SETTINGS: NLP,
    }


AN_HOUR_AGO = made(-HOUR, "")
ENV_AN_HOUR_AGO = made(-HOUR, "gpu=8")


@dataclass
class Case:
    """Tags on the queue, its environment and its shares; the window; what each share owned
    and left idle (instance-seconds; idle as owned when no job runs) and the reading's notes."""

    queue: dict[str, str]
    shares: dict[str, dict[str, str]]
    owned: dict[str, int]
    idle: dict[str, int] | None = None
    since: int = 0
    until: int = 1000
    notes: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    jobs: list[dict[str, Any]] = field(default_factory=list)


CASES = [
    pytest.param(
        Case(
            queue=AN_HOUR_AGO,
            environment=ENV_AN_HOUR_AGO,
            shares={
                "nlp": raised_at_500(since=at(-HOUR)),
                "cv": made(-HOUR, CV),
            },
            # nlp owns 2 until 500 s, then 4; its job of 2 gpu runs 100-900
            owned={"nlp": 2 * 500 + 4 * 500, "cv": 4 * 1000},
            idle={"nlp": 2 * 100 + 2 * 400 + 4 * 100, "cv": 4 * 1000},
            jobs=[job("n1", "nlp", 2, 0, attempt(100, 900))],
        ),
        id="a share resized mid-window owns what it had before the change, then what it has",
    ),
    pytest.param(
        Case(
            queue=AN_HOUR_AGO,
            environment=ENV_AN_HOUR_AGO,
            shares={"nlp": made(-HOUR, NLP), "cv": made(600, CV)},
            owned={"nlp": 4 * 1000, "cv": 4 * 400},
        ),
        id="a share created mid-window owns nothing before it existed",
    ),
    pytest.param(
        Case(
            queue=made(24 * HOUR - 480, ""),
            environment=made(24 * HOUR - 480, "gpu=8"),
            shares={"nlp": made(24 * HOUR - 480, NLP), "cv": made(24 * HOUR - 480, CV)},
            since=0,
            until=24 * HOUR,
            owned={"nlp": 4 * 480, "cv": 4 * 480},
        ),
        id="a queue created 8 minutes ago read over 24 h owns and idles 8 minutes",
    ),
    pytest.param(
        Case(
            queue={},
            shares={"nlp": {}, "cv": {}},
            owned={"nlp": 4 * 1000, "cv": 4 * 1000},
            notes=[
                "job queue q: no record of when it, its environments or its quota shares were "
                "made or changed (not made or changed by airflow-quota apply): "
                "today's quota shares stand for the past"
            ],
        ),
        id="a queue apply did not make: today's shares stand for the past, and it says so",
    ),
    pytest.param(
        Case(
            queue={},
            environment=ENV_AN_HOUR_AGO,
            shares={"nlp": made(-HOUR, NLP), "cv": made(300, CV)},
            owned={"nlp": 4 * 1000, "cv": 4 * 700},
            notes=[
                "job queue q: when it was made is not known (not made or changed by "
                "airflow-quota apply): it is counted as existing throughout"
            ],
        ),
        id="shares apply made in a queue it did not make: the shares' past is known",
    ),
    pytest.param(
        Case(
            queue=AN_HOUR_AGO,
            environment=ENV_AN_HOUR_AGO,
            shares={
                "nlp": raised_at_500(since="unknown"),
                "cv": {**made(-HOUR, "gpu=2 strategy=LEND")},
            },
            owned={"nlp": 2 * 500 + 4 * 500, "cv": 4 * 1000},
            notes=[
                "quota share cv: its settings are not known (changed after 2026-11-29 23:00:00 "
                "UTC other than by airflow-quota apply): today's stand for them",
                "quota share nlp: its settings before 2026-11-30 00:08:20 UTC are not known "
                "(set by other than airflow-quota apply): the earliest known stand for them",
            ],
        ),
        id="what the record does not reach is named, and what stands for it",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_history_with_the_config_in_force(case: Case) -> None:
    shares = [{"quotaShareName": name, "tags": tags} for name, tags in case.shares.items()]
    environment = {**ENV, "tags": case.environment}
    past = queue_past(TODAY, {"tags": case.queue}, [environment], shares)
    configs = timeline(past, ms(case.since), ms(case.until))
    history = rebuild(configs, case.jobs, ms(case.since), ms(case.until))
    totals = integrate(history, ms(case.since), ms(case.until))
    owned, idle = NAMES.index("owned"), NAMES.index("idle")
    assert {s: totals[(s, "gpu")][owned] // 1000 for s in case.owned} == case.owned
    expected_idle = case.owned if case.idle is None else case.idle
    assert {s: totals[(s, "gpu")][idle] // 1000 for s in expected_idle} == expected_idle
    assert list(configs.notes) == case.notes


def test_before_the_queue_existed_nothing_is_counted() -> None:
    past = queue_past(TODAY, {"tags": made(500, "")}, [ENV], [])
    history = rebuild(timeline(past, ms(0), ms(1000)), [], ms(0), ms(1000))
    assert {c.at for c in history.changes} == {ms(500)}
