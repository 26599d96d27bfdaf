"""What the pool manager reads from and does to Airflow, through its public REST API v2.

Built on the official ``apache-airflow-client``; only logging in
(``POST /auth/token``, which the client does not cover) is done by hand. The
token is renewed before it expires: Airflow gives machine clients no refresh
token, so the manager logs in again.

Every call selects exactly what it means to change: a clear names one task
instance of one run (Airflow's defaults would be a dry run of failed tasks
only, in every run), with the note that says why.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import pydantic
import urllib3
from airflow_client.client import ApiClient, Configuration
from airflow_client.client.api.pool_api import PoolApi
from airflow_client.client.api.task_instance_api import TaskInstanceApi
from airflow_client.client.api.version_api import VersionApi
from airflow_client.client.exceptions import ApiException
from airflow_client.client.models.clear_task_instances_body import ClearTaskInstancesBody
from airflow_client.client.models.patch_task_instance_body import PatchTaskInstanceBody
from airflow_client.client.models.pool_body import PoolBody
from airflow_client.client.models.pool_patch_body import PoolPatchBody
from airflow_client.client.models.task_instance_response import TaskInstanceResponse
from airflow_client.client.models.task_instance_state import TaskInstanceState
from airflow_client.client.models.task_instances_batch_body import TaskInstancesBatchBody
from packaging.version import Version

from airflow_quota_provider.core.orphans import TaskSeen
from airflow_quota_provider.pool_manager.overrides import overrides_of
from airflow_quota_provider.pool_manager.pools import PoolSlots
from airflow_quota_provider.pool_manager.tasks import PoolTask, TaskKey, TaskState
from airflow_quota_provider.versions import release

PAGE_SIZE = 1000
"""Task instances per list call (the batch route takes any page size)."""
PARALLEL_PAGES = 4
"""Pages of task instances asked for at once."""

RENEW_BEFORE_SECONDS = 300.0
"""Log in again when the token has less than this left."""

_READ_STATES = [
    TaskInstanceState(state.value) for state in TaskState if state is not TaskState.OTHER
]


class GatewayError(RuntimeError):
    """Airflow could not be reached or refused a call; ``status`` is the HTTP status, if any."""

    def __init__(self, what: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"{what}: {detail}")
        self.status = status


@dataclass(frozen=True)
class Credentials:
    """An Airflow user the manager acts as (never logged, never shown)."""

    username: str
    password: str = ""

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password=***)"


class ApiConnection(Protocol):
    """The fields of an Airflow connection to the api-server (``http://USER:PASSWORD@HOST:PORT``)."""

    @property
    def conn_type(self) -> str | None: ...
    @property
    def host(self) -> str | None: ...
    @property
    def port(self) -> int | None: ...
    @property
    def login(self) -> str | None: ...
    @property
    def password(self) -> str | None: ...


def api_of(conn: ApiConnection, conn_id: str) -> tuple[str, Credentials]:
    """The api-server's URL and the user of the connection ``conn_id``; ``ValueError`` if it
    lacks a host or a login."""
    if not conn.host or not conn.login:
        raise ValueError(f"Airflow connection {conn_id!r} needs a host and a login")
    scheme = conn.conn_type if conn.conn_type in ("http", "https") else "http"
    port = f":{conn.port}" if conn.port else ""
    return f"{scheme}://{conn.host}{port}", Credentials(conn.login, conn.password or "")


class AirflowGateway:
    """One api-server, as one user."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        timeout: float = 30.0,
        write_timeout: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.timeout = timeout
        self.write_timeout = timeout if write_timeout is None else write_timeout
        """The longest a change (a pool, a clear, a fail) may take: under a lease, what
        keeps a manager's last change inside its lease."""
        self.clock = clock
        self.calls = 0
        """REST calls made so far (logins included)."""
        # no retries below: the manager's loop retries with its own growing delay
        self._http = urllib3.PoolManager(retries=False)
        self._configuration = Configuration(host=self.base_url)
        self._configuration.retries = False
        self._client = ApiClient(self._configuration)
        self._expires = 0.0
        self._last_total = 0
        self._executor: ThreadPoolExecutor | None = None
        self._calls_lock = threading.Lock()
        self._clear_takes_note: bool | None = None

    # -- reading ----------------------------------------------------------------------------

    def task_instances(self, pools: Iterable[str]) -> list[PoolTask]:
        """Every task instance of ``pools`` that waits for or holds a slot.

        Page by page, ordered by id; the pages the last read needed are asked for at once
        (an api-server with several workers answers them in parallel), then any more.
        """
        api = TaskInstanceApi(self._authorized())
        names = sorted(pools)

        def page(offset: int) -> Any:
            body = TaskInstancesBatchBody(
                pool=names,
                state=list(_READ_STATES),
                page_limit=PAGE_SIZE,
                page_offset=offset,
                order_by="id",
            )
            return self._call("list task instances", api.get_task_instances_batch, "~", "~", body)

        found: dict[TaskKey, PoolTask] = {}
        offsets = [n * PAGE_SIZE for n in range(max(1, -(-self._last_total // PAGE_SIZE)))]
        while True:
            if len(offsets) == 1:
                answers = [page(offsets[0])]
            else:
                answers = list(self._readers().map(page, offsets))
            for answer in answers:
                for ti in answer.task_instances:
                    task = pool_task(ti)
                    found[task.key] = task  # a row that moved between two pages counts once
            total = max(answer.total_entries for answer in answers)
            done = offsets[-1] + PAGE_SIZE
            if done >= total or len(answers[-1].task_instances) < PAGE_SIZE:
                self._last_total = total
                return list(found.values())
            offsets = list(range(done, total, PAGE_SIZE))

    def _readers(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(PARALLEL_PAGES, thread_name_prefix="quota-read")
        return self._executor

    def pools(self) -> dict[str, PoolSlots]:
        api = PoolApi(self._authorized())
        found: dict[str, PoolSlots] = {}
        offset = 0
        while True:
            page = self._call("list pools", api.get_pools, limit=100, offset=offset)
            for pool in page.pools:
                found[pool.name] = PoolSlots(
                    pool.name, pool.slots, bool(pool.include_deferred), pool.description
                )
            offset += len(page.pools)
            if not page.pools or offset >= page.total_entries:
                return found

    def task_state(self, key: TaskKey) -> TaskSeen | None:
        """A task instance's state, try and last move; ``None`` if it (or its run) is gone."""
        api = TaskInstanceApi(self._authorized())
        try:
            if key.map_index < 0:
                ti = self._call(
                    f"read {key}", api.get_task_instance, key.dag_id, key.run_id, key.task_id
                )
            else:
                ti = self._call(
                    f"read {key}",
                    api.get_mapped_task_instance,
                    key.dag_id,
                    key.run_id,
                    key.task_id,
                    key.map_index,
                )
        except GatewayError as error:
            if error.status == 404:
                return None
            raise
        state = ti.state.value if ti.state is not None else None
        moments = (ti.scheduled_when, ti.queued_when, ti.start_date, ti.end_date)
        moved = max((m.timestamp() for m in moments if m is not None), default=None)
        return TaskSeen(state, int(ti.try_number), moved)

    # -- acting -----------------------------------------------------------------------------

    def create_pool(self, name: str, slots: int, description: str) -> None:
        api = PoolApi(self._authorized())
        body = PoolBody(name=name, slots=slots, description=description, include_deferred=True)
        self._call(f"create pool {name}", api.post_pool, body, write=True)

    def set_pool(self, name: str, slots: int, description: str) -> None:
        """Set a pool's slots, counting deferred tasks (they still hold their GPUs)."""
        api = PoolApi(self._authorized())
        body = PoolPatchBody(pool=name, slots=slots, description=description, include_deferred=True)
        self._call(f"set pool {name}", api.patch_pool, name, body, write=True)

    def delete_pool(self, name: str) -> None:
        api = PoolApi(self._authorized())
        self._call(f"delete pool {name}", api.delete_pool, name, write=True)

    def clear(self, key: TaskKey, note: str) -> None:
        """Clear exactly one task instance (it is killed if it runs, then runs again)."""
        api = TaskInstanceApi(self._authorized())
        task = key.task_id if key.map_index < 0 else [key.task_id, key.map_index]
        body = ClearTaskInstancesBody.from_dict(
            {
                "dag_run_id": key.run_id,
                "task_ids": [task],
                "dry_run": False,
                "only_failed": False,
                "only_running": False,
                "reset_dag_runs": False,
                "include_upstream": False,
                "include_downstream": False,
                "include_future": False,
                "include_past": False,
                "note": note,
            }
        )
        self._call(f"clear {key}", api.post_clear_task_instances, key.dag_id, body, write=True)
        if not self._clear_keeps_note():
            self._note(key, note)

    def _clear_keeps_note(self) -> bool:
        """Whether the api-server keeps a clear's note: before Airflow 3.3 it ignores it,
        so there the note is set by a second call. Asked once."""
        if self._clear_takes_note is None:
            api = VersionApi(self._authorized())
            answer = self._call("read Airflow's version", api.get_version)
            self._clear_takes_note = release(str(answer.version)) >= Version("3.3")
        return self._clear_takes_note

    def _note(self, key: TaskKey, note: str) -> None:
        self._patch(f"note {key}", key, PatchTaskInstanceBody(note=note), ["note"])

    def fail(self, key: TaskKey, note: str) -> None:
        """Mark one task instance failed (it is killed if it runs), with ``note``."""
        body = PatchTaskInstanceBody(new_state=TaskInstanceState.FAILED, note=note)
        self._patch(f"fail {key}", key, body)

    def _patch(
        self,
        what: str,
        key: TaskKey,
        body: PatchTaskInstanceBody,
        update_mask: list[str] | None = None,
    ) -> None:
        api = TaskInstanceApi(self._authorized())
        map_index = key.map_index if key.map_index >= 0 else None
        self._call(
            what,
            api.patch_task_instance,
            key.dag_id,
            key.run_id,
            key.task_id,
            body,
            map_index=map_index,
            update_mask=update_mask,
            write=True,
        )

    # -- plumbing ---------------------------------------------------------------------------

    def _call(
        self,
        what: str,
        method: Callable[..., Any],
        *args: Any,
        write: bool = False,
        **kwargs: Any,
    ) -> Any:
        with self._calls_lock:
            self.calls += 1
        timeout = self.write_timeout if write else self.timeout
        try:
            return method(*args, _request_timeout=timeout, **kwargs)
        except ApiException as error:
            raise GatewayError(what, _detail(error), error.status) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            detail = f"Airflow's API at {self.base_url} is unreachable ({error})"
            raise GatewayError(what, detail) from None
        except (pydantic.ValidationError, ValueError) as error:
            first = str(error).strip().splitlines()[:3]
            detail = f"Airflow's API at {self.base_url} answered what cannot be read: {first}"
            raise GatewayError(what, detail) from None

    def _authorized(self) -> ApiClient:
        if self.clock() > self._expires - RENEW_BEFORE_SECONDS:
            self._login()
        return self._client

    def _login(self) -> None:
        self.calls += 1
        body = {"username": self.credentials.username, "password": self.credentials.password}
        try:
            answer = self._http.request(
                "POST", f"{self.base_url}/auth/token", json=body, timeout=self.timeout
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise GatewayError(
                "log in", f"Airflow's API at {self.base_url} is unreachable ({error})"
            ) from None
        if answer.status == 404:
            detail = (
                f"{self.base_url} has no POST /auth/token: the pool manager needs Airflow 3's "
                "API server (Airflow 2's webserver has neither it nor /api/v2)"
            )
            raise GatewayError("log in", detail, answer.status)
        if answer.status >= 300:
            detail = f"answered {answer.status} for user {self.credentials.username}"
            raise GatewayError("log in", detail, answer.status)
        token = str(json.loads(answer.data)["access_token"])
        self._configuration.access_token = token
        self._expires = _expiry(token, default=self.clock() + 3600)


def pool_task(ti: TaskInstanceResponse) -> PoolTask:
    run_date = ti.logical_date or ti.run_after
    overrides = overrides_of(ti.executor_config)
    return PoolTask(
        key=TaskKey(ti.dag_id, ti.dag_run_id, ti.task_id, ti.map_index),
        pool=ti.pool,
        slots=ti.pool_slots,
        priority_weight=ti.priority_weight or 0,
        run_date=_seconds(run_date) or 0.0,
        state=TaskState.of(ti.state.value if ti.state is not None else None),
        start_date=_seconds(ti.start_date),
        try_number=ti.try_number,
        preemption_retries=overrides.preemption_retries,
        preemptible=overrides.preemptible,
        min_runtime_seconds=overrides.min_runtime_seconds,
        problem=overrides.problem,
    )


def _seconds(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def _expiry(token: str, default: float) -> float:
    """The ``exp`` claim of a JWT (read, not verified: the api-server verifies it)."""
    try:
        payload = token.split(".")[1]
        claims: Mapping[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=="))
        return float(claims["exp"])
    except (IndexError, KeyError, TypeError, ValueError):
        return default


def _detail(error: ApiException) -> str:
    body = error.body if isinstance(error.body, str) else ""
    try:
        detail = json.loads(body).get("detail", body)
    except (ValueError, AttributeError):
        detail = body
    return f"answered {error.status} {error.reason}: {str(detail)[:300]}"
