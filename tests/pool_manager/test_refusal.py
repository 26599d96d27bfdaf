"""A change Airflow refuses is loud and undone.

An HTTP server stands in for an api-server that refuses every clear as Airflow
3.1's does a clear carrying a ``note`` (422 ``extra_forbidden``). The real
manager, store, view and text run against it: the reclaim's victim pool is set
back to what it was, the refusal is logged as an error naming the call and
Airflow's answer, counted, and shown by ``status``, ``explain`` and the API until a
cycle applies all its decisions again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials, GatewayError
from airflow_quota_provider.airflow_pools.heartbeat import Heartbeat, HeartbeatBoard
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.pool_manager.manager import PoolManager, Refused
from airflow_quota_provider.view.api import create_app
from airflow_quota_provider.view.pools_source import PoolsBackend
from airflow_quota_provider.view.text import Style, explanation_lines, status_lines
from tests.core.builders import queue, share
from tests.pool_manager.fake_http import JsonHandler, serving
from tests.view.test_metrics import StatsdListener, statsd  # noqa: F401

REFUSAL = {
    "detail": [
        {
            "type": "extra_forbidden",
            "loc": ["body", "note"],
            "msg": "Extra inputs are not permitted",
            "input": "Cleared by the quota pool manager",
        }
    ]
}
VICTIM = "borrow/r1/train"
OWNER = "own/r1/train"


class RefusingAirflow(ThreadingHTTPServer):
    """Pools and task instances in memory; every clear is refused while ``refuse``."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pools: dict[str, dict[str, Any]] = {}
        self.tis: list[dict[str, Any]] = []
        self.refuse = True
        self.notes_fail = False
        self.variables: dict[str, str] = {}
        self.login_status = 201
        self.pools_status = 200
        self.cleared: list[str] = []
        self.pool_changes: list[tuple[str, int]] = []
        self.patched: list[dict[str, Any]] = []
        """The bodies of the task instances' PATCHes (a fail, a note), in order."""
        self.clear_seconds = 0.0
        """How long a clear takes to answer, once carried out."""
        self.clears_lost = False
        """Whether a clear is lost: not carried out, answered 503 after ``clear_seconds``."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(JsonHandler):
    server: RefusingAirflow

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:
        route = unquote(urlparse(self.path).path)
        if route == "/api/v2/version":
            return self._send({"version": "3.1.8", "git_version": None})
        if route.startswith("/api/v2/variables/"):
            key = route.rsplit("/", 1)[-1]
            if key not in self.server.variables:
                return self._send({"detail": "Not Found"}, 404)
            return self._send({"key": key, "value": self.server.variables[key]})
        if route == "/api/v2/pools":
            if self.server.pools_status != 200:
                return self._send({"detail": "Internal Server Error"}, self.server.pools_status)
            pools = list(self.server.pools.values())
            return self._send({"pools": pools, "total_entries": len(pools)})
        if route == "/api/v2/dags/~/dagRuns/~/taskInstances":  # what changed: all, here
            asked = parse_qs(urlparse(self.path).query).get("pool", [])
            tis = [ti for ti in self.server.tis if ti["pool"] in asked]
            return self._send({"task_instances": tis, "total_entries": len(tis)})
        for ti in self.server.tis:
            if route.endswith(f"/dagRuns/{ti['dag_run_id']}/taskInstances/{ti['task_id']}"):
                return self._send(ti)
        return self._send({"detail": "Not Found"}, 404)

    def do_POST(self) -> None:
        body = self._body()
        route = unquote(urlparse(self.path).path)
        if route == "/auth/token":
            if self.server.login_status != 201:
                return self._send({"detail": "Invalid credentials"}, self.server.login_status)
            return self._send({"access_token": "x.eyJleHAiOiA0MTAyNDQ0ODAwfQ.y"}, 201)
        if route == "/api/v2/variables":
            self.server.variables[body["key"]] = body["value"]
            return self._send(body, 201)
        if route.endswith("/taskInstances/list"):
            tis = [ti for ti in self.server.tis if ti["pool"] in body["pool"]]
            return self._send({"task_instances": tis, "total_entries": len(tis)})
        if route.endswith("/clearTaskInstances"):
            if self.server.refuse:
                return self._send(REFUSAL, 422)
            if self.server.clears_lost:
                time.sleep(self.server.clear_seconds)
                return self._send({"detail": "Service Unavailable"}, 503)
            self.server.cleared.append(body["task_ids"][0])
            for ti in self.server.tis:
                if ti["dag_id"] == route.split("/")[-2]:
                    ti["state"] = "restarting"
            time.sleep(self.server.clear_seconds)
            return self._send({"task_instances": [], "total_entries": 0})
        return self._send({"detail": "Not Found"}, 404)

    def do_PATCH(self) -> None:
        body = self._body()
        route = unquote(urlparse(self.path).path)
        name = route.rsplit("/", 1)[-1]
        if route.startswith("/api/v2/variables/"):
            if name not in self.server.variables:
                return self._send({"detail": "Not Found"}, 404)
            self.server.variables[name] = body["value"]
            return self._send(body)
        if name in self.server.pools:
            self.server.pools[name].update(slots=body["slots"])
            self.server.pool_changes.append((name, body["slots"]))
            return self._send(self.server.pools[name])
        if self.server.notes_fail:
            return self._send({"detail": "Internal Server Error"}, 500)
        self.server.patched.append(body)
        self._send({"note": body.get("note")})


def ti(dag_id: str, pool: str, slots: int, state: str, started: str | None) -> dict[str, Any]:
    return {
        "dag_id": dag_id,
        "dag_run_id": "r1",
        "task_id": "train",
        "map_index": -1,
        "pool": pool,
        "pool_slots": slots,
        "priority_weight": 1,
        "logical_date": "2026-12-04T10:00:00Z",
        "state": state,
        "start_date": started,
        "try_number": 1,
        "executor_config": "{}",
    }


@pytest.fixture
def airflow() -> Iterator[RefusingAirflow]:
    with serving(RefusingAirflow()) as server:
        yield server


def pool(name: str, slots: int, fleet: Fleet) -> dict[str, Any]:
    return {
        "name": name,
        "slots": slots,
        "include_deferred": True,
        "description": fleet.description(name),
    }


def reclaim(airflow: RefusingAirflow) -> Fleet:
    """Share own's 4-GPU task waits while share borrow's task holds 6 of the 8: a reclaim."""
    config = queue(
        share("own").capacity(gpu=4).lend_and_borrow(),
        share("borrow").capacity(gpu=4).lend_and_borrow(),
        gpu=8,
    )
    fleet = Fleet.of(config)
    own, borrow = fleet.pool_of("own", "gpu"), fleet.pool_of("borrow", "gpu")
    airflow.pools = {own: pool(own, 0, fleet), borrow: pool(borrow, 6, fleet)}
    airflow.tis = [
        ti("borrow", borrow, 6, "running", "2026-12-04T10:00:00Z"),
        ti("own", own, 4, "scheduled", None),
    ]
    return fleet


def test_a_refused_clear_sets_the_shrunk_pool_back_and_is_shown_until_a_cycle_succeeds(
    airflow: RefusingAirflow,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    statsd: StatsdListener,  # noqa: F811
) -> None:
    fleet = reclaim(airflow)
    store = Store(f"sqlite:///{tmp_path / 'pm.db'}")
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    me = Heartbeat("vm:1:ab", "db1", "sqlite:///pm.db", 5.0, started_at=time.time())
    board = HeartbeatBoard(gateway, "q")
    manager = PoolManager(
        fleet, gateway, store, clock=lambda: 1_796_400_000.0, heartbeat=board, me=me
    )

    with caplog.at_level(logging.ERROR), pytest.raises(Refused):
        manager.cycle()

    own, borrow = fleet.pool_of("own", "gpu"), fleet.pool_of("borrow", "gpu")
    # shrunk for the reclaim, then set back once the clear was refused
    assert airflow.pool_changes == [(borrow, 0), (borrow, 6)]
    assert airflow.pools[borrow]["slots"] == 6 and airflow.pools[own]["slots"] == 0
    assert store.events() == []  # no preemption happened
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors[0].startswith(
        f"Airflow refused to clear {VICTIM} (answered 422 Unprocessable Entity: "
        "[{'type': 'extra_forbidden', 'loc': ['body', 'note']"
    )
    assert errors[0].endswith("setting back the 1 pool(s) this cycle shrank")
    assert "airflow.quota_provider.q.refusals:1|c" in statsd.received()

    backend = PoolsBackend(fleet, gateway, store)
    view = backend.queue("q")
    # no cycle of the manager has ended well yet: the page says so beside the refusal
    assert view.alerts[1].startswith("no pool manager has ever cycled fleet q")
    alert = view.alerts[0]
    assert alert.startswith(
        f"the pool manager cannot apply its decisions: Airflow refused to clear {VICTIM} at "
        "2026-12-04 "
    )
    assert "answered 422 Unprocessable Entity" in alert
    assert alert.endswith("it undid that cycle's pool changes and tries again each cycle")
    assert status_lines(view, Style())[1] == f"ALERT: {alert}"
    assert status_lines(view, Style())[2] == f"ALERT: {view.alerts[1]}"
    api = TestClient(create_app(lambda: backend, lambda: None))
    assert api.get("/api/v1/queues/q").json()["alerts"] == view.alerts  # the page draws these
    assert explanation_lines(backend.explain(OWNER), Style())[1] == f"  ALERT: {alert}"

    airflow.refuse = False  # the cause is gone: the next cycle applies everything
    manager.cycle()
    assert airflow.cleared == ["train"]
    assert [row.note for row in store.events()] != []
    assert store.refusal() is None
    assert PoolsBackend(fleet, gateway, store).queue("q").alerts == []
    assert store.refusals()[0].resolved_at is not None


def test_a_clear_whose_note_fails_is_still_recorded(
    airflow: RefusingAirflow, tmp_path: Path
) -> None:
    """Before Airflow 3.3 the note is a second call: if it fails, the clear done before it
    is still recorded (``events``, the page, the victim's external work), never lost."""
    fleet = reclaim(airflow)
    airflow.refuse, airflow.notes_fail = False, True
    store = Store(f"sqlite:///{tmp_path / 'pm.db'}")
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    manager = PoolManager(fleet, gateway, store, clock=lambda: 1_796_400_000.0)
    with pytest.raises(GatewayError, match=r"^note borrow/r1/train: answered 500"):
        manager.cycle()
    assert airflow.cleared == ["train"]
    (event,) = store.events()
    assert event.note.startswith("Cleared by the quota pool manager for own/r1/train (RECLAIM)")


def test_a_failure_to_reach_airflow_is_not_a_refusal(tmp_path: Path) -> None:
    config = queue(share("own").capacity(gpu=4).lend_and_borrow(), gpu=4)
    gateway = AirflowGateway("http://127.0.0.1:9", Credentials("manager", "secret"), timeout=1)
    manager = PoolManager(Fleet.of(config), gateway, Store(f"sqlite:///{tmp_path / 'pm.db'}"))
    with pytest.raises(Exception, match="unreachable") as raised:
        manager.cycle()
    assert not isinstance(raised.value, Refused)
    assert manager.store.refusal() is None
