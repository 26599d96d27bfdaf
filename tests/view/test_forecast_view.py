"""A waiting job's predicted start, on an AWS Batch queue the local endpoint runs: in the
view's records, ``status``, ``explain`` and the API.

nlp's job ``train`` (4 p4d, nlp owns 2 and borrows vision's idle 2) ran three times,
holding its capacity 608 s each time (600 s of training, 8 s to start); a fourth run
has held it 100 s when ``next`` (4 p4d, nlp, behind it) waits. ``next`` cannot start
before ``train`` ends: ``train`` is expected to run its median 608 s, 304 to 1216 s
(half to twice that: too few runs for percentiles: its 10th and 90th percentile), so it
ends 508 s from now, likely; ``next`` starts then. Both are the median over three plays
with durations drawn from that estimate (seeded by the job ids, which differ from run
to run), so they are checked to agree, and the range to hold the plays with every job
at its 25th and 75th percentile, not to the second.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.core.views import QueueView
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.view.backend import BatchBackend
from tests.emulator.conftest import QUEUE, Endpoint, submit
from tests.view.test_api import authed, client, token  # noqa: F401 - fixtures
from tests.view.test_cli_status import run

pytestmark = pytest.mark.usefixtures("aws_env")
SPAN = r"(now|\d+(\.\d)? (s|min|h))"
"""A length of time as ``status`` writes it."""


@pytest.fixture
def behind(endpoint: Endpoint) -> tuple[str, str]:
    """Ids of the running ``train`` and of ``next`` waiting behind it."""
    for _ in range(3):
        submit(endpoint.batch, "nlp", 4, name="train", duration=600)
        endpoint.advance(700)
    train = submit(endpoint.batch, "nlp", 4, name="train", duration=600)
    endpoint.advance(100)
    waiting = submit(endpoint.batch, "nlp", 4, name="next", duration=60)
    endpoint.advance(1)
    return train, waiting


def read(endpoint: Endpoint) -> QueueView:
    return BatchBackend(BatchQuotaHook(aws_conn_id=None)).queue(QUEUE)


def test_the_waiting_job_starts_when_the_job_ahead_is_expected_to_end(
    endpoint: Endpoint, behind: tuple[str, str]
) -> None:
    train, waiting = behind
    view = read(endpoint)
    job, ahead = view.job(waiting), view.job(train)
    assert job is not None and ahead is not None
    start = job.predicted_start
    assert start is not None and start.likely is not None and start.latest is not None
    assert start.earliest is not None
    end = ahead.expected_end
    assert end is not None and not end.guess
    # next waits only for train: it starts when train ends, in every play
    assert (start.likely, start.earliest, start.latest) == (end.likely, end.earliest, end.latest)
    assert view.now <= end.earliest <= end.likely <= end.latest
    # the 25th and 75th percentile plays: 608 x 2 ** -/+(0.6745 / 1.2816) = 422 and 876
    # s in all, 322 and 776 s from now; the range holds them, the drawn plays may widen it
    assert (end.earliest - view.now) / 1000 <= 322.5
    assert (end.latest - view.now) / 1000 >= 775.5
    assert [w.job_id for w in start.waits_for] == [train]
    assert not start.guess and start.victims == []
    assert start.waits_for[0].at == start.likely
    assert ahead.duration is not None
    assert ahead.duration.basis == (
        "median of 3 earlier runs and 1 still running (range: half to twice the median, "
        "too few runs for percentiles)"
    )
    # no earlier run of next: its own duration is the default, a guess (capped by its
    # request's StoppingCondition.MaxRuntimeInSeconds, 86400, above it)
    assert job.duration is not None and job.duration.guess
    assert view.forecast_basis.startswith("likely: the median start over 3 plays")


def test_status_and_explain_say_when_it_starts(endpoint: Endpoint, behind: tuple[str, str]) -> None:
    train, waiting = behind
    done = run("status", "--job-queue", QUEUE)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    line = lines[lines.index(next(x for x in lines if x.startswith("  waiting #1 next"))) + 1]
    assert re.fullmatch(
        rf"    starts in about {SPAN}, between {SPAN} and {SPAN}: after 1 job ends in the "
        r"forecast; borrowing",
        line,
    ), line
    assert any(
        x.startswith(f"  running train ({train}") and "expected to end in about " in x
        for x in lines
    )
    done = run("explain", waiting)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(x.startswith("  forecast: starts in about ") for x in lines), lines
    awaited = f"    waits for train ({train}, running, share nlp) to end, in "
    assert any(x.startswith(awaited) for x in lines), lines
    done = run("status", "--json", "--job-queue", QUEUE)
    [queue] = json.loads(done.stdout)
    [found] = queue["waiting"]
    assert found["predicted_start"]["waits_for"] == [
        {"job_id": train, "at": found["predicted_start"]["likely"]}
    ]


def test_the_api_returns_the_predicted_start(
    authed: TestClient,  # noqa: F811
    behind: tuple[str, str],
) -> None:
    _, waiting = behind
    answer = authed.get(f"/quota/api/v1/queues/{QUEUE}/jobs?state=waiting")
    assert answer.status_code == 200, answer.text
    [job] = answer.json()
    assert job["job_id"] == waiting
    start: dict[str, Any] = job["predicted_start"]
    assert re.fullmatch(rf"in about {SPAN}, between {SPAN} and {SPAN}", start["text"])
    assert start["guess"] is False and start["no_start_code"] is None
    assert start["earliest"] < start["likely"] < start["latest"]
