"""What the pool manager reads from and does to Airflow, through its public REST API v2.

Every call the manager, the view, the capacity sensor and ``plan``/``apply`` make to
Airflow goes through :class:`AirflowGateway`, over
:class:`~airflow_quota_provider.airflow_pools.rest.RestSession` (JSON over HTTP, not
the generated client: see there why). A body carries only the fields the
api-server's release accepts: its version is asked once, before the first change
whose shape depends on it.

Every call selects exactly what it means to change: a clear names one task
instance of one run (Airflow's defaults would be a dry run of failed tasks
only, in every run), with the note that says why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Protocol

from packaging.version import Version

from airflow_quota_provider.airflow_pools.overrides import overrides_of
from airflow_quota_provider.airflow_pools.pools import PoolSlots, SlotsInUse
from airflow_quota_provider.airflow_pools.rest import Credentials, GatewayError, RestSession, path
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core.orphans import TaskSeen
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.versions import release

__all__ = ["AirflowGateway", "Credentials", "GatewayError", "api_of", "pool_task"]

PAGE_SIZE = 1000
"""Task instances per list call (the batch route takes any page size)."""
CHANGED_PAGE_SIZE = 100
"""Task instances per GET list call: Airflow's default ``[api] maximum_page_limit`` (a
larger ask is cut to it)."""
PARALLEL_PAGES = 4
"""Pages of task instances asked for at once."""

CLEAR_TAKES_NOTE = Version("3.3")
"""The first release whose clear body has ``note``: before it the api-server refuses the
field (422 ``extra_forbidden``), so the note is set by a second call."""

CREATE_SHOWS_WITHIN_SECONDS = 5.0
"""How long a pool Airflow answered as created may take to show (see ``_pool_made``)."""

_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError)
"""What reading a field of an answer that is not as documented raises."""

_READ_STATES = [state.value for state in TaskState if state is not TaskState.OTHER]


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
        write_budget: Callable[[], float] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rest = RestSession(base_url, credentials, timeout=timeout, clock=clock)
        self.write_budget = write_budget
        """The seconds a change (a pool, a clear, a fail) started now may take, its login
        and a second try after a 401 included (``None``: ``timeout``). Under a lease, its
        time left: what keeps a manager's last change inside its lease."""
        self._last_total = 0
        self._executor: ThreadPoolExecutor | None = None
        self._version: Version | None = None

    @property
    def base_url(self) -> str:
        return self.rest.base_url

    @property
    def credentials(self) -> Credentials:
        return self.rest.credentials

    @property
    def calls(self) -> int:
        """REST calls made so far (logins included)."""
        return self.rest.calls

    # -- reading ----------------------------------------------------------------------------

    def version(self) -> Version:
        """The api-server's Airflow release, asked once."""
        if self._version is None:
            what = "read Airflow's version"
            answer = self.rest.call(what, "GET", path("version"))
            try:
                self._version = release(str(answer["version"]))
            except _UNREADABLE as error:
                raise self.rest.unreadable(what, error) from None
        return self._version

    def task_instances(self, pools: Iterable[str]) -> list[PoolTask]:
        """Every task instance of ``pools`` that waits for or holds a slot."""
        return self.task_instances_dated(pools)[0]

    def task_instances_dated(self, pools: Iterable[str]) -> tuple[list[PoolTask], float | None]:
        """Every task instance of ``pools`` that waits for or holds a slot, and the
        api-server's time when the read began (``None`` if it did not say).

        Page by page, ordered by id; the pages the last read needed are asked for at once
        (an api-server with several workers answers them in parallel), then any more.
        """
        names = sorted(pools)
        what = "list task instances"

        def page(offset: int) -> tuple[list[PoolTask], int, int, float | None]:
            body = {
                "pool": names,
                "state": _READ_STATES,
                "page_limit": PAGE_SIZE,
                "page_offset": offset,
                "order_by": "id",
            }
            route = path("dags", "~", "dagRuns", "~", "taskInstances", "list")
            answer, date = self.rest.call_dated(what, "POST", route, body=body)
            try:
                rows = answer["task_instances"]
                tasks = [pool_task(ti) for ti in rows]
                return tasks, len(rows), int(answer["total_entries"]), date
            except _UNREADABLE as error:
                raise self.rest.unreadable(what, error) from None

        found: dict[TaskKey, PoolTask] = {}
        began: float | None = None
        offsets = [n * PAGE_SIZE for n in range(max(1, -(-self._last_total // PAGE_SIZE)))]
        while True:
            if len(offsets) == 1:
                answers = [page(offsets[0])]
            else:
                answers = list(self._readers().map(page, offsets))
            dates = [date for *_, date in answers if date is not None]
            if began is None and dates:
                began = min(dates)
            for tasks, *_ in answers:
                for task in tasks:
                    found[task.key] = task  # a row that moved between two pages counts once
            total = max(total for _, _, total, _ in answers)
            done = offsets[-1] + PAGE_SIZE
            if done >= total or answers[-1][1] < PAGE_SIZE:
                self._last_total = total
                return list(found.values()), began
            offsets = list(range(done, total, PAGE_SIZE))

    def task_instances_changed(
        self, pools: Iterable[str], since: float, at_most: int | None = None
    ) -> tuple[list[PoolTask] | None, float | None]:
        """The task instances of ``pools`` that Airflow changed at ``since`` or later, in any
        state (one that ended shows it), and the api-server's time when the read began;
        ``None`` instead of the tasks when more than ``at_most`` changed (a full read then
        costs less: its pages are ten times larger).

        Only the list route Airflow 3 offers by GET filters by ``updated_at``
        (``updated_at_gte``, from 3.0.0); it pages by at most ``[api] maximum_page_limit``
        rows (100 unless set), so the pages are asked for one after another.
        """
        what = "list task instances changed since the last read"
        route = path("dags", "~", "dagRuns", "~", "taskInstances")
        found: dict[TaskKey, PoolTask] = {}
        began: float | None = None
        offset = 0
        while True:
            query = {
                "pool": sorted(pools),
                "updated_at_gte": datetime.fromtimestamp(since, UTC).isoformat(),
                "order_by": "id",
                "limit": CHANGED_PAGE_SIZE,
                "offset": offset,
            }
            answer, date = self.rest.call_dated(what, "GET", route, query=query)
            if began is None:
                began = date
            try:
                rows = answer["task_instances"]
                total = int(answer["total_entries"])
                if at_most is not None and total > at_most:
                    return None, began
                for ti in rows:
                    task = pool_task(ti)
                    found[task.key] = task
            except _UNREADABLE as error:
                raise self.rest.unreadable(what, error) from None
            offset += len(rows)
            if not rows or offset >= total:
                return list(found.values()), began

    def _readers(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(PARALLEL_PAGES, thread_name_prefix="quota-read")
        return self._executor

    def pools(self) -> dict[str, PoolSlots]:
        found: dict[str, PoolSlots] = {}
        offset = 0
        while True:
            query = {"limit": 100, "offset": offset}
            page = self.rest.call("list pools", "GET", path("pools"), query=query)
            try:
                rows = page["pools"]
                for pool in rows:
                    found[pool["name"]] = PoolSlots(
                        pool["name"],
                        int(pool["slots"]),
                        bool(pool.get("include_deferred")),
                        pool.get("description"),
                        _in_use(pool),
                    )
                total = int(page["total_entries"])
            except _UNREADABLE as error:
                raise self.rest.unreadable("list pools", error) from None
            offset += len(rows)
            if not rows or offset >= total:
                return found

    def task_state(self, key: TaskKey) -> TaskSeen | None:
        """A task instance's state, try and last move; ``None`` if it (or its run) is gone."""
        what = f"read {key}"
        try:
            ti = self.rest.call(what, "GET", _task_route(key))
        except GatewayError as error:
            if error.status == 404:
                return None
            raise
        try:
            moments = [
                _seconds(ti.get(name))
                for name in ("scheduled_when", "queued_when", "start_date", "end_date")
            ]
            moved = max((m for m in moments if m is not None), default=None)
            return TaskSeen(ti.get("state"), int(ti["try_number"]), moved)
        except _UNREADABLE as error:
            raise self.rest.unreadable(what, error) from None

    def variable(self, key: str) -> str | None:
        """An Airflow Variable's value as text; ``None`` if there is none of that key."""
        what = f"read Variable {key}"
        try:
            found = self.rest.call(what, "GET", path("variables", key))
        except GatewayError as error:
            if error.status == 404:
                return None
            raise
        try:
            value = found["value"]
        except _UNREADABLE as error:
            raise self.rest.unreadable(what, error) from None
        return value if isinstance(value, str) else None

    # -- acting -----------------------------------------------------------------------------

    def set_variable(self, key: str, value: str, description: str) -> None:
        """Set an Airflow Variable (made if missing)."""
        what = f"set Variable {key}"
        body = {"key": key, "value": value, "description": description}
        try:
            self._write(what, "PATCH", path("variables", key), body)
        except GatewayError as error:
            if error.status != 404:
                raise
            self._write(what, "POST", path("variables"), body)

    def create_pool(self, name: str, slots: int, description: str) -> None:
        body = {
            "name": name,
            "slots": slots,
            "description": description,
            "include_deferred": True,
        }
        what = f"create pool {name}"
        self._write(what, "POST", path("pools"), body)
        held = self._pool_made(what, name)
        try:
            theirs = held.get("description")
            same = (theirs, bool(held.get("include_deferred"))) == (description, True)
        except _UNREADABLE as error:
            raise self.rest.unreadable(what, error) from None
        if not same:
            raise GatewayError(
                what,
                f"a pool of that name was made meanwhile (description {theirs!r}) and Airflow "
                "kept it, though it answered the create with success",
                409,
            )

    def _pool_made(self, what: str, name: str) -> Any:
        """The pool ``name`` as Airflow holds it once its create has answered.

        Airflow 3.0 under a newer FastAPI (seen with 0.125) commits after it has answered:
        the pool shows a moment later, and a pool made meanwhile under the same name gets a
        201 instead of a 409 (the failed commit may then cut the connection) and stays as it
        was. So the pool is read back until it shows.
        """
        deadline = time.monotonic() + CREATE_SHOWS_WITHIN_SECONDS
        while True:
            try:
                return self.rest.call(what, "GET", path("pools", name))
            except GatewayError as error:  # unreachable too: the failed commit may cut it
                if error.status not in (404, None) or time.monotonic() > deadline:
                    raise
            time.sleep(0.1)

    def set_pool(self, name: str, slots: int, description: str) -> None:
        """Set a pool's slots, counting deferred tasks (they still hold their GPUs)."""
        body = {"pool": name, "slots": slots, "description": description, "include_deferred": True}
        self._write(f"set pool {name}", "PATCH", path("pools", name), body)

    def delete_pool(self, name: str) -> None:
        self._write(f"delete pool {name}", "DELETE", path("pools", name))

    def clear(self, key: TaskKey, note: str) -> None:
        """Clear exactly one task instance (it is killed if it runs, then runs again),
        with ``note`` in the clear itself from Airflow 3.3; before, the note is set by
        :meth:`note_after_clear`, a second call that the caller makes once it has recorded
        the clear (a note that fails must not lose what was done)."""
        task: str | list[str | int] = key.task_id
        if key.map_index >= 0:
            task = [key.task_id, key.map_index]
        body: dict[str, Any] = {
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
        }
        if self.version() >= CLEAR_TAKES_NOTE:
            body["note"] = note
        route = path("dags", key.dag_id, "clearTaskInstances")
        self._write(f"clear {key}", "POST", route, body)

    def note_after_clear(self, key: TaskKey, note: str) -> None:
        """Set the note of a task just cleared, where the clear could not carry it."""
        if self.version() < CLEAR_TAKES_NOTE:
            self._patch(f"note {key}", key, {"note": note}, ["note"])

    def fail(self, key: TaskKey, note: str) -> None:
        """Mark one task instance failed (it is killed if it runs), with ``note``."""
        self._patch(f"fail {key}", key, {"new_state": "failed", "note": note})

    def _patch(
        self, what: str, key: TaskKey, body: dict[str, Any], update_mask: list[str] | None = None
    ) -> None:
        query = {"update_mask": update_mask} if update_mask else None
        self._write(what, "PATCH", _task_route(key), body, query)

    def _write(
        self,
        what: str,
        method: str,
        route: str,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
    ) -> None:
        budget = None if self.write_budget is None else self.write_budget()
        self.rest.call(what, method, route, body=body, query=query, timeout=budget)


def _task_route(key: TaskKey) -> str:
    segments: list[str | int] = ["dags", key.dag_id, "dagRuns", key.run_id, "taskInstances"]
    segments.append(key.task_id)
    if key.map_index >= 0:
        segments.append(key.map_index)
    return path(*segments)


def pool_task(ti: Mapping[str, Any]) -> PoolTask:
    """A task instance of the batch list as the manager needs it (``KeyError``,
    ``TypeError`` or ``ValueError`` if a field it needs is missing or wrong)."""
    run_date = ti.get("logical_date") or ti.get("run_after")
    overrides = overrides_of(ti.get("executor_config"))
    return PoolTask(
        key=TaskKey(ti["dag_id"], ti["dag_run_id"], ti["task_id"], int(ti["map_index"])),
        pool=ti["pool"],
        slots=int(ti["pool_slots"]),
        priority_weight=int(ti.get("priority_weight") or 0),
        run_date=_seconds(run_date) or 0.0,
        state=TaskState.of(ti.get("state")),
        start_date=_seconds(ti.get("start_date")),
        try_number=int(ti["try_number"]),
        scheduled_at=_seconds(ti.get("scheduled_when")),
        preemption_retries=overrides.preemption_retries,
        preemptible=overrides.preemptible,
        min_runtime_seconds=overrides.min_runtime_seconds,
        problem=overrides.problem,
        has_logical_date=ti.get("logical_date") is not None,
    )


def _in_use(pool: Mapping[str, Any]) -> SlotsInUse | None:
    """What a pool's task instances use per state, ``None`` if Airflow did not say."""
    try:
        return SlotsInUse(
            scheduled=int(pool["scheduled_slots"]),
            queued=int(pool["queued_slots"]),
            running=int(pool["running_slots"]),
            deferred=int(pool["deferred_slots"]),
        )
    except _UNREADABLE:
        return None


def _seconds(moment: str | None) -> float | None:
    """Seconds since the epoch of an ISO 8601 moment as Airflow writes it."""
    if moment is None:
        return None
    return datetime.fromisoformat(moment).timestamp()
