"""Real Airflow processes and the pool manager, for the end-to-end tests of this folder."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Row

from airflow_quota_provider.airflow_pools.database import engine_for
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.demo.airflow_api import AirflowApi, AirflowApiError
from airflow_quota_provider.demo.processes import Processes, wait_for
from airflow_quota_provider.demo.stack import Stack, StackSettings
from tests.postgres import plain, postgres_database

HERE = Path(__file__).resolve().parent
REDIS = "redis://127.0.0.1:6379/{database}"
_REDIS_CLAIM = "airflow-quota-test:claimed-by"


@pytest.fixture(scope="module")
def locks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the GPU lock files of ``dags/pools_locks.py``."""
    return tmp_path_factory.mktemp("gpu-locks")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The manager's records on SQLite, and on a fresh database of the local PostgreSQL
    (skipped without one)."""
    if request.param == "sqlite":
        yield Store(f"sqlite:///{tmp_path / 'manager.db'}")
        return
    for url in postgres_database():
        if url is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432")
        made = Store(plain(url))
        yield made
        made.engine.dispose()


@pytest.fixture(scope="module")
def managers_db() -> Iterator[str]:
    """A PostgreSQL database for pool managers in HA (skips the module without one)."""
    for url in postgres_database():
        if url is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432: managers in HA need it")
        yield plain(url)


def query(url: str, sql: str) -> list[Row[*tuple[Any, ...]]]:
    """The rows of one query on the database at ``url``."""
    engine = engine_for(url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(sql)).all())
    finally:
        engine.dispose()


def leader(stack: Stack, managers_db: str) -> str | None:
    """The name of the manager process that holds the fleet's lease now."""
    rows = query(
        managers_db,
        "SELECT holder FROM quota_manager_lease WHERE fleet = 'gpus' "
        "AND expires_at > extract(epoch from clock_timestamp())",
    )
    if not rows:
        return None
    pid = int(str(rows[0][0]).split(":")[1])
    return next((n for n, m in stack.processes.started.items() if m.popen.pid == pid), None)


def kill_the_leader(stack: Stack, managers_db: str) -> tuple[str, float]:
    """SIGKILL the manager that leads, wait for another to take over, and start the killed
    one again as the standby; its name and the seconds the take-over took."""
    wait_for("a leader", lambda: leader(stack, managers_db) is not None, 30)
    victim = leader(stack, managers_db)
    assert victim is not None
    killed = time.monotonic()
    stack.processes.kill(victim)
    wait_for(
        "the standby to take over",
        lambda: leader(stack, managers_db) not in (None, victim),
        30,
        every=0.1,
    )
    took = time.monotonic() - killed
    stack.processes.restart(victim)
    return victim, took


def redis_database() -> Iterator[str]:
    """A Redis database of its own on the local Redis (``redis://127.0.0.1:6379/N``), for
    one stack's Celery broker, emptied afterwards; skips the test when there is none.

    Parallel tests each claim another of Redis's numbered databases (an expiring key
    set only if absent, in a database holding nothing else), so their Celery queues
    never mix.
    """
    try:
        import redis
    except ImportError:
        pytest.skip("the redis package is not installed: the Celery tests need Redis")
    for database in range(1, 16):
        client = redis.Redis(host="127.0.0.1", port=6379, db=database, socket_timeout=5)
        try:
            claimed = client.set(_REDIS_CLAIM, str(os.getpid()), nx=True, ex=3600)
        except redis.ConnectionError as error:
            pytest.skip(f"no Redis answers at 127.0.0.1:6379 ({error}): the Celery tests need it")
        if claimed and client.dbsize() == 1:
            try:
                yield REDIS.format(database=database)
            finally:
                client.flushdb()
                client.close()
            return
        if claimed:  # someone else's keys are there: leave that database alone
            client.delete(_REDIS_CLAIM)
        client.close()
    pytest.skip("every database of the Redis at 127.0.0.1:6379 is in use")


@contextmanager
def managed_stack(
    workdir: Path,
    config: Path,
    dag_ids: tuple[str, ...],
    extra_env: dict[str, str] | None = None,
    database_url: str | None = None,
    password: str = "admin",
    emulator_args: tuple[str, ...] = (),
    manager_args: tuple[str, ...] = (),
    interval: float = 1,
    executor: str = "LocalExecutor",
    celery_broker_url: str | None = None,
) -> Iterator[Stack]:
    """api-server, scheduler, dag-processor, triggerer and ``airflow-quota pool-manager``
    (1 s cycles), with the DAGs of ``dags/`` parsed and the config's pools created.

    :param password: the Airflow user's; the manager and the ``airflow_api_default``
        connection log in with it.
    :param emulator_args: more options for the local AWS endpoint.
    :param manager_args: more options for the manager, e.g. ``("--watch-sagemaker",)``.
    :param interval: seconds between the manager's cycles.
    :param executor: Airflow's; ``CeleryExecutor`` needs ``celery_broker_url`` and
        ``database_url``, and the test starts the workers
        (:meth:`~airflow_quota_provider.demo.stack.Stack.start_celery_worker`).
    """
    settings = StackSettings(
        workdir=workdir,
        dags_folder=HERE / "dags",
        quota_config=config,
        extra_env=extra_env or {},
        database_url=database_url,
        password=password,
        emulator_args=emulator_args,
        executor=executor,
        celery_broker_url=celery_broker_url,
    )
    with Processes(workdir / "logs") as processes:
        stack = Stack(settings, processes)
        # the GPU Quotas page of the api-server shows this pools fleet
        host = stack.api_url.removeprefix("http://")
        stack.env.update(
            {
                "AIRFLOW__QUOTA_PROVIDER__VIEW_FLEET_CONFIG": str(config),
                "AIRFLOW__QUOTA_PROVIDER__VIEW_POOL_MANAGER_DATABASE": (
                    f"sqlite:///{workdir / 'airflow-quota-pool-manager.db'}"
                ),
                "AIRFLOW_CONN_AIRFLOW_API_DEFAULT": (
                    f"http://{settings.username}:{settings.password}@{host}"
                ),
            }
        )
        stack.start(dag_ids)
        stack.start_pool_manager(config, *manager_args, interval=interval)
        wait_for("the manager to create the pools", lambda: _pools_made(stack.api), 60, processes)
        yield stack


def _pools_made(api: AirflowApi) -> bool:
    try:
        answer = api.get("/api/v2/pools?limit=100")
    except AirflowApiError:
        return False
    return any(pool["name"].startswith("quota-") for pool in answer["pools"])


def task_instance(api: AirflowApi, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    return dict(api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"))


def state_of(api: AirflowApi, dag_id: str, run_id: str, task_id: str) -> str | None:
    """A task instance's state; ``None`` while Airflow has no such task instance yet (the
    scheduler has not made the run's tasks; Airflow 3.0 also answers 404 for a moment after
    it)."""
    try:
        state = task_instance(api, dag_id, run_id, task_id)["state"]
    except AirflowApiError as error:
        if error.status == 404:
            return None
        raise
    return None if state is None else str(state)


def trigger(api: AirflowApi, dag_id: str, seconds: float, then_seconds: float | None = None) -> str:
    """A run of ``dag_id`` whose tasks work ``seconds``; the ``pools_fleet.py`` DAGs' tries
    after the first, ``then_seconds`` if given."""
    conf: dict[str, float] = {"seconds": seconds}
    if then_seconds is not None:
        conf["then_seconds"] = then_seconds
    body = {"logical_date": None, "conf": conf}
    return str(api.post(f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"])


def wait_state(
    stack: Stack, dag_id: str, run_id: str, state: str, what: str, timeout: float = 120
) -> None:
    """Wait until the ``train`` task of a run is in ``state``."""

    def reached() -> bool:
        return state_of(stack.api, dag_id, run_id, "train") == state

    wait_for(what, reached, timeout, stack.processes)


OVERTOOK = "though the manager did not admit it, before a task of its pool that comes first"


def unadmitted_starts(stack: Stack) -> int:
    """How many tasks the managers of ``stack`` saw start without their admission, ahead
    of a task of their pool that came first (each warns once; see ``Overtaking``)."""
    logs = sorted((stack.settings.workdir / "logs").glob("pool-manager*.log"))
    return sum(log.read_text().count(OVERTOOK) for log in logs)
