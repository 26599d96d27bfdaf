"""What changed in Airflow between a cycle's read and its changes.

A victim that ended after the cycle read it is not cleared (nor failed): Airflow's
clear cannot be made to depend on the task still running; a clear that reaches a
task which has just ended reruns it or, when the scheduler marks its run done at
that moment, leaves it without a state in a finished run for good (seen in the
Celery chaos run). So the manager reads the victim again right before it acts.

A task an earlier cycle admitted, which this cycle withdraws (its pool shrinks) and
the scheduler queues before the shrink lands, keeps every pool from growing in this
cycle: its capacity is what the cycle gives others (seen in the same run: two tasks
found their GPUs taken).

An HTTP server in the test answers Airflow's routes the manager uses and records
every change it is asked for.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.core import PreemptionKind
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.core.builders import queue, share
from tests.pool_manager.fake_http import JsonHandler, serving
from tests.pool_manager.test_decide import FLEET, VISION, key
from tests.pool_manager.test_gateway_pages import ti


class FakeAirflow(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.task: dict[str, Any] = {}
        self.tasks: list[dict[str, Any]] = []
        self.pools: dict[str, int] = {}
        self.on_change: dict[str, dict[str, str]] = {}
        """The task states the scheduler sets when a pool is changed: pool -> task -> state."""
        self.changes: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(JsonHandler):
    server: FakeAirflow

    def do_GET(self) -> None:
        server = self.server
        if self.path == "/api/v2/version":
            return self._send({"version": "3.3.2"})
        if self.path.startswith("/api/v2/pools"):
            pools = [pool(name, slots) for name, slots in server.pools.items()]
            return self._send({"pools": pools, "total_entries": len(pools)})
        if urlparse(self.path).path == "/api/v2/dags/~/dagRuns/~/taskInstances":
            # what changed since the last read: every task, here (Airflow sends fewer)
            return self._send({"task_instances": server.tasks, "total_entries": len(server.tasks)})
        return self._send(server.task)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if self.path == "/auth/token":
            return self._send({"access_token": "x.eyJleHAiOiA0MTAyNDQ0ODAwfQ.y"})
        if self.path.endswith("/taskInstances/list"):
            tasks = self.server.tasks[body["page_offset"] :][: body["page_limit"]]
            return self._send({"task_instances": tasks, "total_entries": len(self.server.tasks)})
        self.server.changes.append(("POST", self.path))
        return self._send({"task_instances": [], "total_entries": 0})

    def do_PATCH(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        server = self.server
        server.changes.append(("PATCH", self.path))
        name = self.path.split("?")[0].rsplit("/", 1)[1]
        if "slots" in body:
            server.pools[name] = body["slots"]
        for task in server.tasks:  # the scheduler queued into the older slots meanwhile
            task["state"] = server.on_change.get(name, {}).get(task["task_id"], task["state"])
        return self._send(pool(name, server.pools.get(name, 0)))


def pool(name: str, slots: int) -> dict[str, Any]:
    counts = dict.fromkeys(
        ("occupied_slots", "open_slots", "queued_slots", "running_slots", "scheduled_slots"), 0
    )
    return {"name": name, "slots": slots, "include_deferred": True, "deferred_slots": 0, **counts}


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    with serving(FakeAirflow()) as server:
        yield server


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


def pool_task(task_id: str, pool_name: str, state: str) -> dict[str, Any]:
    fields = {"dag_id": "train", "dag_run_id": "run-1", "task_id": task_id, "pool": pool_name}
    return {**ti(0), **fields, "id": str(uuid.uuid4()), "pool_slots": 2, "state": state}


@pytest.mark.parametrize(
    ("raced", "a_slots"),
    [
        pytest.param(False, 2, id="the withdrawn task is still waiting: the owner's pool grows"),
        pytest.param(True, 0, id="the scheduler queued it meanwhile: no pool grows"),
    ],
)
def test_a_withdrawn_admission_the_scheduler_raced_keeps_pools_from_growing(
    airflow: FakeAirflow, tmp_path: Path, raced: bool, a_slots: int
) -> None:
    """b borrowed a's 2 GPUs: its second task was admitted (b's pool 4) but is not queued
    yet when a's task arrives; the cycle gives a its own 2 and shuts b's pool (0 slots)."""
    fleet = Fleet.of(
        queue(
            share("a").capacity(gpu=2).lend_and_borrow(),
            share("b").capacity(gpu=2).lend_and_borrow(),
            gpu=4,
        )
    )
    airflow.pools = {"quota-a-gpu": 0, "quota-b-gpu": 4}
    airflow.tasks = [
        pool_task("b1", "quota-b-gpu", "running"),
        pool_task("b2", "quota-b-gpu", "scheduled"),
        pool_task("a1", "quota-a-gpu", "scheduled"),
    ]
    if raced:
        airflow.on_change = {"quota-b-gpu": {"b2": "queued"}}
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    PoolManager(fleet, gateway, Store(f"sqlite:///{tmp_path / 'manager.db'}")).cycle()
    assert airflow.pools == {"quota-a-gpu": a_slots, "quota-b-gpu": 0}
