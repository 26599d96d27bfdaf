"""A victim that ended after the cycle read it is not cleared (nor failed).

Airflow's clear cannot be made to depend on the task still running; a clear that
reaches a task which has just ended reruns it or, when the scheduler marks its run
done at that moment, leaves it without a state in a finished run for good (seen in
the Celery chaos run). So the manager reads the victim again right before it acts.
An HTTP server in the test answers Airflow's routes the manager uses, and records
every change it is asked for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.core import PreemptionKind
from airflow_quota_provider.pool_manager.decide import Stop
from airflow_quota_provider.pool_manager.gateway import AirflowGateway, Credentials
from airflow_quota_provider.pool_manager.manager import PoolManager
from airflow_quota_provider.pool_manager.store import Store
from tests.pool_manager.test_decide import FLEET, VISION, key
from tests.pool_manager.test_gateway_pages import ti


class FakeAirflow(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.task: dict[str, Any] = {}
        self.changes: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeAirflow

    def do_GET(self) -> None:
        if self.path == "/api/v2/version":
            return self._send({"version": "3.3.2"})
        return self._send(self.server.task)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/auth/token":
            return self._send({"access_token": "x.eyJleHAiOiA0MTAyNDQ0ODAwfQ.y"})
        self.server.changes.append(("POST", self.path))
        return self._send({"task_instances": [], "total_entries": 0})

    def do_PATCH(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.changes.append(("PATCH", self.path))
        return self._send({"task_instances": [], "total_entries": 0})

    def _send(self, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    server = FakeAirflow()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def victim(fails: bool = False) -> Stop:
    return Stop(key("v"), VISION, PreemptionKind.RECLAIM, key("n"), fails, "note", 2, 0.0, 1)


@pytest.mark.parametrize(
    ("state", "try_number", "fails", "acts"),
    [
        pytest.param("running", 1, False, True, id="still running: cleared"),
        pytest.param("deferred", 1, False, True, id="still deferred: cleared"),
        pytest.param("success", 1, False, False, id="ended: not cleared"),
        pytest.param("failed", 1, True, False, id="ended: not failed either"),
        pytest.param("running", 2, False, False, id="another try runs: not cleared"),
    ],
)
def test_the_victim_is_read_again_right_before_it_is_preempted(
    airflow: FakeAirflow, tmp_path: Path, state: str, try_number: int, fails: bool, acts: bool
) -> None:
    airflow.task = {**ti(0), "dag_id": "train", "dag_run_id": "run-1", "task_id": "v"}
    airflow.task.update(state=state, try_number=try_number)
    store = Store(f"sqlite:///{tmp_path / 'manager.db'}")
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    manager = PoolManager(FLEET, gateway, store)
    manager._preempt(victim(fails), 1_800_000_000.0)
    assert bool(airflow.changes) == acts, airflow.changes
    assert store.preemptions([key("v")]) == ({key("v"): 1} if acts else {})
