"""The gateway reads task instances page by page, the pages it needed last time at once.

An HTTP server in the test answers Airflow's token and task-instance batch routes
from a list the test changes between reads, so the pages, their order and their
concurrency are seen from the server's side.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools import gateway as gateway_module
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials, GatewayError
from tests.pool_manager.fake_http import JsonHandler, serving

PAGE = 3


class FakeAirflow(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tis: list[dict[str, Any]] = []
        self.offsets: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()
        self.broken = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(JsonHandler):
    server: FakeAirflow

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if self.path == "/auth/token":
            return self._send({"access_token": "x.eyJleHAiOiA0MTAyNDQ0ODAwfQ.y"})
        server = self.server
        with server.lock:
            server.in_flight += 1
            server.most_in_flight = max(server.most_in_flight, server.in_flight)
            server.offsets.append(body["page_offset"])
        time.sleep(0.2)  # long enough for the pages asked for at once to overlap
        offset, limit = body["page_offset"], body["page_limit"]
        answer = {
            "task_instances": server.tis[offset : offset + limit],
            "total_entries": len(server.tis),
        }
        with server.lock:
            server.in_flight -= 1
        if server.broken:
            return self._send({"task_instances": "not a list"})
        return self._send(answer)


def ti(n: int) -> dict[str, Any]:
    return {
        "id": f"0190a1b2-0000-7000-8000-{n:012d}",
        "dag_id": "d",
        "dag_display_name": "d",
        "dag_run_id": "r",
        "task_id": f"t{n}",
        "task_display_name": f"t{n}",
        "map_index": -1,
        "max_tries": 0,
        "try_number": 1,
        "pool": "quota-a-gpu",
        "pool_slots": 1,
        "priority_weight": 1,
        "run_after": "2026-12-03T07:00:00Z",
        "executor_config": "{}",
        "state": "scheduled",
    }


@pytest.fixture
def airflow(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAirflow]:
    monkeypatch.setattr(gateway_module, "PAGE_SIZE", PAGE)
    with serving(FakeAirflow()) as server:
        yield server


def test_the_pages_of_the_last_read_are_asked_for_at_once(airflow: FakeAirflow) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    airflow.tis = [ti(n) for n in range(8)]
    first = gateway.task_instances(["quota-a-gpu"])
    assert sorted(t.key.task_id for t in first) == sorted(f"t{n}" for n in range(8))
    # the first read learns how many there are from page 1, then asks for the rest at once
    assert airflow.offsets[0] == 0 and sorted(airflow.offsets) == [0, 3, 6]
    airflow.offsets.clear()
    airflow.most_in_flight = 0
    again = gateway.task_instances(["quota-a-gpu"])
    assert len(again) == 8
    assert sorted(airflow.offsets) == [0, 3, 6]
    assert airflow.most_in_flight == 3, "the three pages were asked for at once"


def test_more_task_instances_than_last_time_are_read_to_the_end(airflow: FakeAirflow) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    airflow.tis = [ti(n) for n in range(4)]
    assert len(gateway.task_instances(["quota-a-gpu"])) == 4
    airflow.tis = [ti(n) for n in range(11)]
    airflow.offsets.clear()
    assert len(gateway.task_instances(["quota-a-gpu"])) == 11
    assert sorted(airflow.offsets) == [0, 3, 6, 9]


def test_fewer_task_instances_than_last_time_and_none_at_all(airflow: FakeAirflow) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    airflow.tis = [ti(n) for n in range(9)]
    assert len(gateway.task_instances(["quota-a-gpu"])) == 9
    airflow.tis = [ti(1)]
    assert [t.key.task_id for t in gateway.task_instances(["quota-a-gpu"])] == ["t1"]
    airflow.tis = []
    assert gateway.task_instances(["quota-a-gpu"]) == []


def test_a_row_seen_on_two_pages_counts_once(airflow: FakeAirflow) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    airflow.tis = [ti(0), ti(1), ti(2), ti(2), ti(3)]  # a row moved between two pages
    assert sorted(t.key.task_id for t in gateway.task_instances(["quota-a-gpu"])) == [
        "t0",
        "t1",
        "t2",
        "t3",
    ]


def test_an_unreadable_page_is_a_gateway_error(airflow: FakeAirflow) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    airflow.tis = [ti(0)]
    airflow.broken = True
    with pytest.raises(GatewayError) as raised:
        gateway.task_instances(["quota-a-gpu"])
    assert str(raised.value).startswith(
        f"list task instances: Airflow's API at {airflow.url} answered what cannot be read"
    )
