"""A clear is shaped by the api-server's release, asked once.

An HTTP server stands in for the api-server of each Airflow 3 line, refusing any
field its ``ClearTaskInstancesBody`` lacks as that release does (422
``extra_forbidden``: the bodies forbid extra fields). The fields per release are
those of each release's OpenAPI document (``v2-rest-api-generated.yaml``). The
real api-servers of every line are met in ``test_end_to_end.py``, run on each line
by ``make test-compat``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.core.task_key import TaskKey
from tests.pool_manager.fake_http import JsonHandler, serving

_BEFORE_3_1 = {
    "dag_run_id",
    "dry_run",
    "end_date",
    "include_downstream",
    "include_future",
    "include_past",
    "include_upstream",
    "only_failed",
    "only_running",
    "reset_dag_runs",
    "start_date",
    "task_ids",
}
CLEAR_FIELDS = {
    "3.0.6": _BEFORE_3_1,
    "3.1.8": _BEFORE_3_1 | {"run_on_latest_version"},
    "3.2.2": _BEFORE_3_1 | {"run_on_latest_version", "prevent_running_task"},
    "3.3.2": _BEFORE_3_1 | {"run_on_latest_version", "prevent_running_task", "note"},
}


class StrictAirflow(ThreadingHTTPServer):
    def __init__(self, version: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.version = version
        self.requests: list[tuple[str, str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(JsonHandler):
    server: StrictAirflow

    def _route(self, method: str) -> tuple[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        parsed = urlparse(self.path)
        route = unquote(parsed.path) + (f"?{parsed.query}" if parsed.query else "")
        if route != "/auth/token":
            self.server.requests.append((method, route, body))
        return unquote(parsed.path), body

    def do_GET(self) -> None:
        self._route("GET")
        self._send({"version": self.server.version, "git_version": None})

    def do_POST(self) -> None:
        route, body = self._route("POST")
        if route == "/auth/token":
            return self._send({"access_token": "x.eyJleHAiOiA0MTAyNDQ0ODAwfQ.y"}, 201)
        extra = sorted(set(body) - CLEAR_FIELDS[self.server.version])
        if extra:
            detail = [{"type": "extra_forbidden", "loc": ["body", name]} for name in extra]
            return self._send({"detail": detail}, 422)
        self._send({"task_instances": [], "total_entries": 0})

    def do_PATCH(self) -> None:
        _, body = self._route("PATCH")
        query = parse_qs(urlparse(self.path).query)
        assert set(body) <= {"note", "new_state"} and query.get("update_mask") in (None, ["note"])
        self._send({"task_instances": [], "total_entries": 0})


@pytest.fixture(params=sorted(CLEAR_FIELDS))
def airflow(request: pytest.FixtureRequest) -> Iterator[StrictAirflow]:
    with serving(StrictAirflow(request.param)) as server:
        yield server


def test_each_release_is_sent_a_clear_it_accepts_and_the_note_where_it_can_take_it(
    airflow: StrictAirflow,
) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    run = "manual__2026-12-04T10:00:00+00:00"
    for key, note in ((TaskKey("d", run, "t"), "why"), (TaskKey("d", run, "m", 3), "why again")):
        gateway.clear(key, note)
        gateway.note_after_clear(key, note)
    clears = [(method, route) for method, route, _ in airflow.requests]
    task = f"/api/v2/dags/d/dagRuns/{run}/taskInstances"
    if airflow.version == "3.3.2":
        assert clears == [
            ("GET", "/api/v2/version"),
            ("POST", "/api/v2/dags/d/clearTaskInstances"),
            ("POST", "/api/v2/dags/d/clearTaskInstances"),
        ]
        bodies = [body for _, _, body in airflow.requests[1:]]
        assert [(b["task_ids"], b["note"]) for b in bodies] == [
            (["t"], "why"),
            ([["m", 3]], "why again"),
        ]
    else:
        assert clears == [
            ("GET", "/api/v2/version"),
            ("POST", "/api/v2/dags/d/clearTaskInstances"),
            ("PATCH", f"{task}/t?update_mask=note"),
            ("POST", "/api/v2/dags/d/clearTaskInstances"),
            ("PATCH", f"{task}/m/3?update_mask=note"),
        ]
        notes = [body for method, _, body in airflow.requests if method == "PATCH"]
        assert notes == [{"note": "why"}, {"note": "why again"}]
    assert all(
        body["dry_run"] is False and body["only_failed"] is False
        for method, _, body in airflow.requests
        if method == "POST"
    )
