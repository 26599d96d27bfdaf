"""The few calls of Airflow's REST API (``/api/v2``) the demo needs, with a simple-auth token."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


class AirflowApiError(RuntimeError):
    """Airflow's API answered with an error status."""

    def __init__(self, method: str, path: str, status: int, detail: str) -> None:
        super().__init__(f"{method} {path} answered {status}: {detail}")
        self.status = status


class AirflowApi:
    """A client of one api-server, logged in as ``username`` (simple auth manager)."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self._token: str | None = None

    def token(self) -> str:
        if self._token is None:
            answer = self._send(
                "POST", "/auth/token", {"username": self.username, "password": self.password}
            )
            self._token = str(answer["access_token"])
        return self._token

    def get(self, path: str) -> Any:
        return self._send("GET", path, None, self.token())

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self._send("POST", path, body, self.token())

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        return self._send("PATCH", path, body, self.token())

    def delete(self, path: str) -> Any:
        return self._send("DELETE", path, None, self.token())

    def set_task_state(self, dag_id: str, run_id: str, task_id: str, state: str) -> None:
        """Mark a task instance ``state`` (``failed``, ``success``), as a user does in the UI."""
        path = f"/api/v2/dags/{_quote(dag_id)}/dagRuns/{_quote(run_id)}/taskInstances/"
        self.patch(path + _quote(task_id), {"new_state": state})

    def healthy(self) -> bool:
        try:
            self._send("GET", "/api/v2/monitor/health", None)
        except (OSError, AirflowApiError):
            return False
        return True

    def has_dag(self, dag_id: str) -> bool:
        try:
            self.get(f"/api/v2/dags/{_quote(dag_id)}")
        except AirflowApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    def trigger(self, dag_id: str) -> str:
        """Start a run of ``dag_id`` now; returns its run id."""
        answer = self.post(f"/api/v2/dags/{_quote(dag_id)}/dagRuns", {"logical_date": None})
        return str(answer["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        answer = self.get(f"/api/v2/dags/{_quote(dag_id)}/dagRuns/{_quote(run_id)}")
        return str(answer["state"])

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        answer = self.get(f"/api/v2/dags/{_quote(dag_id)}/dagRuns/{_quote(run_id)}/taskInstances")
        return {ti["task_id"]: str(ti["state"]) for ti in answer["task_instances"]}

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = (
            f"/api/v2/dags/{_quote(dag_id)}/dagRuns/{_quote(run_id)}/taskInstances/"
            f"{_quote(task_id)}/xcomEntries/{_quote(key)}?deserialize=true"
        )
        return self.get(path)["value"]

    def _send(self, method: str, path: str, body: Any, token: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:500]
            raise AirflowApiError(method, path, error.code, detail) from None
        return json.loads(text) if text else None


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")
