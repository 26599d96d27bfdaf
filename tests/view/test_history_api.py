"""The history and usage routes of the GPU Quotas API, on the story of
``tests/history/test_usage_story.py`` (borrowing, a reclaim, an in-share preemption)
read through Airflow's API server app (a pools fleet's recorded history:
``test_pools_history.py``).

The endpoint's clock reads T0 + 2 h when the story ends, so the last 6 h are 4 h before
the story, in which both shares own 4 p4d and leave them idle, then the story's 2 h.
Every figure below is worked by hand from the story's table (seconds after T0), not
from the code: the 6-hour range steps by 5 minutes from T0 - 4 h.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.core.history_chart import RANGES, window
from airflow_quota_provider.view.backend import HISTORY_TTL, BatchBackend
from tests.emulator.conftest import P4D, QUEUE
from tests.history.test_usage_story import END, EXPECTED, HOUR, _value, ms
from tests.history.test_usage_story import Story as UsageStory
from tests.history.test_usage_story import story as usage_story  # noqa: F401 - a fixture
from tests.view.conftest import PASSWORD, USER

pytestmark = pytest.mark.usefixtures("aws_env")

BEFORE = 4 * HOUR
"""Seconds of the 6-hour range before the story starts."""
STEP = 300
FIGURES = ("owned", "own_use", "borrowed", "lent", "idle", "waiting", "waiting_jobs")
# Instance-seconds (job-seconds for waiting_jobs) over the range, from the story's table:
# the report's figures (tests/history/test_usage_story.py) plus 4 h owned and idle before
# T0; cv's jobs wait 1 + 1208 + 1148 (c1) + 3 (c3) s, nlp's 3 s (n1).
TOTALS = {
    "cv": (4 * 21600, 23964, 9686, 0, 4836 + 4 * BEFORE, 14154, 2360),
    "nlp": (4 * 21600, 4832, 0, 9686, 14282 + 4 * BEFORE, 12, 3),
}
RECLAIM = "Cross-share preemption triggered to reclaim borrowed capacity"
IN_SHARE = "In-share preemption triggered by a higher priority job"


@pytest.fixture
def authed(
    api_app: Any,
    usage_story: UsageStory,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TestClient]:
    """Airflow's API server app reading the story's endpoint, logged in."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", usage_story.endpoint.url)
    mounted = next(r.app for r in api_app.routes if getattr(r, "path", None) == "/quota")
    mounted.state.backend = None
    client = TestClient(api_app)
    answer = client.post("/auth/token", json={"username": USER, "password": PASSWORD})
    client.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"
    yield client
    mounted.state.backend = None


def history(client: TestClient, **params: str) -> dict[str, Any]:
    answer = client.get(f"/quota/api/v1/queues/{QUEUE}/history", params=params)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def at(seconds: int) -> int:
    """The index of the 5-minute step that starts ``seconds`` after T0."""
    return (seconds + BEFORE) // STEP


def test_the_history_steps_through_the_story(authed: TestClient) -> None:
    found = history(authed, range="6h")
    since = ms(-BEFORE)
    assert (found["range"], found["since"], found["until"], found["step"]) == (
        "6h",
        since,
        ms(END),
        STEP,
    )
    assert found["times"] == [since + i * STEP * 1000 for i in range(72)]
    shares = {s["share"]: s for s in found["shares"]}
    assert [(s["share"], s["unit"]) for s in found["shares"]] == [("cv", P4D), ("nlp", P4D)]
    for share, totals in TOTALS.items():
        # each point is an average over 300 s: summed back, the story's instance-seconds
        summed = tuple(round(sum(shares[share][name]) * STEP) for name in FIGURES)
        assert summed == totals, share
    cv, nlp = shares["cv"], shares["nlp"]
    before = at(-STEP)
    assert [cv[name][before] for name in FIGURES] == [4, 0, 0, 0, 4, 0, 0]
    # 600-900: c1 runs 4 own + 2 borrowed until 603, then waits for 6; n1 waits 600-603
    # for nlp's 4 and runs from 603 on; nlp lends 2 and leaves 2 idle until 603
    step = at(600)
    assert [cv[name][step] for name in FIGURES] == [
        4,
        4 * 3 / 300,
        2 * 3 / 300,
        0,
        4 * 297 / 300,
        6 * 297 / 300,
        297 / 300,
    ]
    assert [nlp[name][step] for name in FIGURES] == [
        4,
        4 * 297 / 300,
        0,
        2 * 3 / 300,
        2 * 3 / 300,
        4 * 3 / 300,
        3 / 300,
    ]
    # 2400-2700: c3 waits 2400-2403 for 4 while c1 still runs; then c3 runs in cv's 4
    # and c1 waits for 6: cv borrows nothing from 2403, nlp lends nothing
    step = at(2400)
    assert [cv[name][step] for name in ("own_use", "borrowed", "waiting", "waiting_jobs")] == [
        4,
        2 * 3 / 300,
        (4 * 3 + 6 * 297) / 300,
        300 / 300,
    ]
    assert nlp["lent"][step] == 2 * 3 / 300


def test_the_fleet_utilization_over_time(authed: TestClient) -> None:
    (fleet,) = history(authed, range="6h")["fleet"]
    assert fleet["unit"] == P4D
    assert fleet["capacity"] == [8] * 72
    assert fleet["used"][: at(0)] == [0] * at(0)
    # 0-300: c1 holds 6 from 1 s on; 3600-3900: c1 holds 6 throughout (c3 ended at 3551)
    assert fleet["used"][at(0)] == 6 * 299 / 300
    assert fleet["utilization"][at(3600)] == 6 / 8
    # 1800-2100: n1 holds 4 until 1811, c1 6 from 1811
    assert fleet["used"][at(1800)] == (4 * 11 + 6 * 289) / 300
    assert fleet["waiting"][at(600)] == (4 * 3 + 6 * 297) / 300


def test_the_days_and_the_preemption_marks(authed: TestClient, usage_story: UsageStory) -> None:  # noqa: F811
    found = history(authed, range="6h")
    ids = usage_story.ids
    # T0 is midnight: the range starts the day before, in which nothing started
    assert found["days"] == [
        {
            "start": ms(-86400),
            "jobs_started": 0,
            "wait_p50": None,
            "wait_p95": None,
            "hours_lost": {},
        },
        {
            "start": ms(0),
            "jobs_started": 3,
            "wait_p50": 3.0,  # of 3 (n1), 3 (c3), 2357 (c1: 1 + 1208 + 1148)
            "wait_p95": 2357.0,
            "hours_lost": {P4D: 102 * 6 / HOUR + 92 * 6 / HOUR},  # summed per preemption
        },
    ]
    marks = found["preemptions"]
    reasons = [mark.pop("reason") for mark in marks]
    assert reasons[0].startswith(RECLAIM) and reasons[1].startswith(IN_SHARE), reasons
    assert marks == [
        {
            "at": ms(603),
            "kind": "RECLAIM",
            "share": "cv",
            "job_id": ids["c1"],
            "job_name": "c1",
            "preemptor_share": "nlp",
            "preemptor": ids["n1"],
            "preemptor_name": "n1",
            "demand": {P4D: 6},
            "hours_lost": {P4D: 102 * 6 / HOUR},
        },
        {
            "at": ms(2403),
            "kind": "IN_SHARE",
            "share": "cv",
            "job_id": ids["c1"],
            "job_name": "c1",
            "preemptor_share": "cv",
            "preemptor": ids["c3"],
            "preemptor_name": "c3",
            "demand": {P4D: 6},
            "hours_lost": {P4D: 92 * 6 / HOUR},
        },
    ]


def test_a_share_filter_keeps_its_series_days_and_preemptions(authed: TestClient) -> None:
    found = history(authed, range="6h", share="nlp")
    assert [s["share"] for s in found["shares"]] == ["nlp"]
    assert len(found["fleet"]) == 1  # the fleet stays whole
    # nlp suffered none; it caused the reclaim
    assert [(m["kind"], m["preemptor_share"]) for m in found["preemptions"]] == [("RECLAIM", "nlp")]
    assert found["days"][1] == {
        "start": ms(0),
        "jobs_started": 1,
        "wait_p50": 3.0,
        "wait_p95": 3.0,
        "hours_lost": {},
    }


@pytest.mark.parametrize("span", list(RANGES))
def test_every_range_has_its_step(authed: TestClient, span: str) -> None:
    found = history(authed, range=span)
    length, step = RANGES[span]
    assert found["step"] == step // 1000
    assert found["until"] == ms(END)
    assert found["until"] - length - step < found["since"] <= found["until"] - length
    assert len(found["times"]) == len(found["shares"][0]["owned"]) == len(found["fleet"][0]["used"])


# The report over the 6-hour range: the story's, plus 4 h in which each share owned 4
# p4d and left them idle.
EXPECTED_6H = [
    {**EXPECTED[0], "owned_hours": 86400 / HOUR, "idle_hours": (4836 + 4 * BEFORE) / HOUR},
    {**EXPECTED[1], "owned_hours": 86400 / HOUR, "idle_hours": (14282 + 4 * BEFORE) / HOUR},
]


def test_the_usage_route_is_the_showback_report(authed: TestClient) -> None:
    answer = authed.get(f"/quota/api/v1/queues/{QUEUE}/usage", params={"range": "6h"})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["rows"] == EXPECTED_6H
    assert (found["queue"], found["range"], found["since"], found["until"]) == (
        QUEUE,
        "6h",
        ms(-BEFORE),
        ms(END),
    )
    assert found["notes"][0].startswith("rebuilt from what AWS keeps")
    only = authed.get(f"/quota/api/v1/queues/{QUEUE}/usage?range=6h&share=nlp").json()
    assert only["rows"] == EXPECTED_6H[1:]


def test_the_usage_as_a_csv_download(authed: TestClient) -> None:
    answer = authed.get(f"/quota/api/v1/queues/{QUEUE}/usage?range=6h&format=csv")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    assert answer.headers["content-disposition"] == (
        f'attachment; filename="usage-{QUEUE}-6h-{ms(END) // 1000}.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert list(rows[0]) == list(EXPECTED_6H[0])
    assert [{k: _value(v) for k, v in row.items()} for row in rows] == EXPECTED_6H


@pytest.mark.parametrize(
    ("route", "detail"),
    [
        ("history?range=1y", "range '1y' is not one of 6h, 24h, 7d, 30d"),
        ("usage?range=12h", "range '12h' is not one of 6h, 24h, 7d, 30d"),
        (
            "history?range=6h&share=ghost",
            f"share 'ghost' is not a share of {QUEUE}; its shares are: cv, nlp",
        ),
        (
            "usage?share=ghost",
            f"share 'ghost' is not a share of {QUEUE}; its shares are: cv, nlp",
        ),
        ("usage?format=xml", "format 'xml' is not one of json, csv"),
    ],
)
def test_a_bad_parameter_is_named_with_what_is_allowed(
    authed: TestClient, route: str, detail: str
) -> None:
    answer = authed.get(f"/quota/api/v1/queues/{QUEUE}/{route}")
    assert (answer.status_code, answer.json()) == (400, {"detail": detail})


def test_an_unknown_queue_is_not_found(authed: TestClient) -> None:
    answer = authed.get("/quota/api/v1/queues/nowhere/history")
    assert answer.status_code == 404
    assert answer.json()["detail"].startswith("job queue 'nowhere' does not exist")


def test_a_rebuilt_history_is_kept_per_range(
    usage_story: UsageStory,  # noqa: F811
) -> None:
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    hook = BatchQuotaHook(
        aws_conn_id=None, region_name="us-east-1", endpoint_url=usage_story.endpoint.url
    )
    described: list[str] = []
    describe = hook.describe_service_job

    def counted(job_id: str) -> dict[str, Any]:
        described.append(job_id)
        return describe(job_id)

    hook.describe_service_job = counted  # type: ignore[method-assign]
    now = [0.0]
    backend = BatchBackend(hook, ttl=1, clock=lambda: now[0])
    backend.queue(QUEUE)  # the view's own reading describes the jobs that hold or ended
    described.clear()
    first = backend.usage_history(QUEUE, "6h")
    assert len(described) == 3  # c1, n1, c3: once each
    now[0] = HISTORY_TTL - 1  # past the view's cache time, within the history's
    assert backend.usage_history(QUEUE, "6h") is first
    assert backend.usage_history(QUEUE, "24h") is not first
    assert first.window == window("6h", ms(END))
    now[0] = HISTORY_TTL + 1
    assert backend.usage_history(QUEUE, "6h") is not first
