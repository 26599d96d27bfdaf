"""A pools task's history for the forecast: what is asked of Airflow (over real HTTP, a
server standing in for the api-server), how often, and the estimates made of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.task_history import TaskHistory, task_durations
from airflow_quota_provider.core.durations import NO_HISTORY, DurationEstimate
from tests.pool_manager.fake_http import JsonHandler, serving
from tests.pool_manager.test_decide import NLP, RUNNING, task

FEW = "(range: half to twice the median, too few runs for percentiles)"


class FakeAirflow(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: list[dict[str, Any]] = []
        self.durations: dict[tuple[str, str], list[Any]] = {}
        self.failing = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(JsonHandler):
    server: FakeAirflow

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if self.path == "/auth/token":
            return self._send({"access_token": "x.eyJleHAiOiA0MTAyNDQ0ODAwfQ.y"})
        assert self.path == "/api/v2/dags/~/dagRuns/~/taskInstances/list"
        self.server.bodies.append(body)
        if self.server.failing:
            return self._send({"detail": "down"}, 500)
        key = (body["dag_ids"][0], body["task_ids"][0])
        rows = [{"duration": d} for d in self.server.durations.get(key, [])]
        return self._send({"task_instances": rows, "total_entries": len(rows)})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    with serving(FakeAirflow()) as server:
        yield server


def history(airflow: FakeAirflow, clock: Clock, **options: Any) -> TaskHistory:
    gateway = AirflowGateway(airflow.url, Credentials("viewer", "secret"))
    return TaskHistory(gateway, clock=clock, **options)


def test_the_last_successful_runs_of_each_task_are_read_once_per_ttl(
    airflow: FakeAirflow,
) -> None:
    airflow.durations = {("d", "a"): [600, 500.5, None], ("d", "b"): []}
    clock = Clock()
    kept = history(airflow, clock, ttl=300)
    assert kept.durations([("d", "a"), ("d", "b"), ("d", "a")]) == {
        ("d", "a"): (600.0, 500.5),  # a row without a duration does not count
        ("d", "b"): (),
    }
    assert airflow.bodies == [
        {
            "dag_ids": ["d"],
            "task_ids": [task_id],
            "state": ["success"],
            "order_by": "-end_date",
            "page_limit": 20,
        }
        for task_id in ("a", "b")
    ]
    clock.now = 29
    kept.durations([("d", "a"), ("d", "b")])
    assert len(airflow.bodies) == 2, "kept: no call within the ttls"
    clock.now = 30
    airflow.durations[("d", "b")] = [60]
    assert kept.durations([("d", "a"), ("d", "b")]) == {
        ("d", "a"): (600.0, 500.5),
        ("d", "b"): (60.0,),
    }
    assert len(airflow.bodies) == 3, "an empty history is read again after 30 s, not 300"
    clock.now = 299
    kept.durations([("d", "a"), ("d", "b")])
    assert len(airflow.bodies) == 3, "a history with runs is kept the whole ttl"
    clock.now = 300
    kept.durations([("d", "a")])
    assert len(airflow.bodies) == 4


def test_at_most_so_many_tasks_are_read_per_call(airflow: FakeAirflow) -> None:
    airflow.durations = {("d", "a"): [1], ("d", "b"): [2]}
    kept = history(airflow, Clock(), reads_per_call=1)
    assert kept.durations([("d", "a"), ("d", "b")]) == {("d", "a"): (1.0,), ("d", "b"): ()}
    assert kept.durations([("d", "a"), ("d", "b")]) == {("d", "a"): (1.0,), ("d", "b"): (2.0,)}
    assert len(airflow.bodies) == 2


def test_a_history_airflow_cannot_give_is_none_until_the_ttl_ends(airflow: FakeAirflow) -> None:
    airflow.failing = True
    clock = Clock()
    kept = history(airflow, clock, ttl=300)
    assert kept.durations([("d", "a")]) == {("d", "a"): ()}
    clock.now = 29
    kept.durations([("d", "a")])
    assert len(airflow.bodies) == 1, "a failing Airflow is not asked again every read"
    clock.now = 30
    kept.durations([("d", "a")])
    assert len(airflow.bodies) == 2, "nor left unasked for the whole ttl"


NOW = 1000.0
ESTIMATES = {
    "a task's own earlier runs": (
        [task("w", NLP, 1)],
        {("train", "w"): (300.0, 600.0, 900.0)},
        {"train/run-1/w": DurationEstimate(600, 300, 1200, f"median of 3 earlier runs {FEW}")},
    ),
    "no earlier run: the default, a guess": (
        [task("w", NLP, 1)],
        {},
        {"train/run-1/w": NO_HISTORY},
    ),
    # Kaplan-Meier: 300 ends among 4 (3/4 last longer); the try running at 400 s leaves
    # the risk set, 600 ends among the 2 left (3/8 last longer): the median is 600; what
    # it has run is the forecast's to take into account (DurationEstimate.after)
    "a try holding capacity counts as still running": (
        [task("r", NLP, 1, RUNNING, started=NOW - 400)],
        {("train", "r"): (300.0, 600.0, 900.0)},
        {
            "train/run-1/r": DurationEstimate(
                600, 300, 1200, f"median of 3 earlier runs and 1 still running {FEW}"
            )
        },
    ),
}


@pytest.mark.parametrize(("tasks", "runs", "want"), ESTIMATES.values(), ids=ESTIMATES.keys())
def test_estimates_from_the_history(
    tasks: list[Any], runs: dict[tuple[str, str], tuple[float, ...]], want: dict[str, Any]
) -> None:
    assert task_durations(tasks, runs, NOW) == want
