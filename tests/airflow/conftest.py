"""Fixtures: the local endpoint over HTTP, reached by boto3 through the usual AWS environment.

Hooks get ``aws_conn_id=None`` or ``aws_default`` (absent, so boto3's defaults
apply): ``AWS_ENDPOINT_URL`` points every client at the endpoint.
"""

from __future__ import annotations

import os
import tempfile

# Airflow reads its configuration when first imported: point it at a fresh
# home with SQLite before anything here imports it. Each test process has its
# own: pytest-xdist's workers inherit the environment of the process that loaded
# this file first (when tests/airflow is named on the command line), and two
# processes must not migrate one SQLite file at once.
_OURS = "QUOTA_TESTS_AIRFLOW_HOME"
_inherited = os.environ.get(_OURS) is not None and os.environ.get(_OURS) == os.environ.get(
    "AIRFLOW_HOME"
)
if "AIRFLOW_HOME" not in os.environ or (_inherited and "PYTEST_XDIST_WORKER" in os.environ):
    _HOME = tempfile.mkdtemp(prefix="airflow-home-")
    os.environ.update(
        {
            "AIRFLOW_HOME": _HOME,
            _OURS: _HOME,
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{os.path.join(_HOME, 'airflow.db')}",
            "AIRFLOW__CORE__DAGS_FOLDER": os.path.join(_HOME, "dags"),
        }
    )
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
# as airflow.cfg has by default: connections' passwords and Variables are stored encrypted
if not os.environ.get("AIRFLOW__CORE__FERNET_KEY"):
    from cryptography.fernet import Fernet

    os.environ["AIRFLOW__CORE__FERNET_KEY"] = Fernet.generate_key().decode()

import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator, Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from tests.emulator.conftest import QUEUE, TWO_SHARES, Endpoint, serve, submit  # noqa: E402


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """``airflow db migrate`` once per session, into the SQLite file of this session's home;
    then a connection with a password and a Variable stored through Airflow and read back,
    as a deployment does, through Airflow's fernet (some installations cannot:
    ``airflow-quota doctor`` names them)."""
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True)
    store_secrets()


SECRET_CHECK = "airflow_quota_fernet_check"


def store_secrets() -> None:
    from airflow.models.connection import Connection
    from airflow.models.variable import Variable
    from airflow.utils.session import create_session

    with create_session() as session:
        session.query(Connection).filter(Connection.conn_id == SECRET_CHECK).delete()
        session.add(Connection(conn_id=SECRET_CHECK, conn_type="aws", login="k", password="s"))
    Variable.set(SECRET_CHECK, "stored encrypted")
    with create_session() as session:
        stored = session.query(Connection).filter(Connection.conn_id == SECRET_CHECK).one()
        assert stored.is_encrypted, "Airflow stored the password in plain text"
        assert stored.password == "s"
    assert Variable.get(SECRET_CHECK) == "stored encrypted"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "2",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def endpoint(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """:data:`TWO_SHARES` with time stopped; tests move it with ``endpoint.advance``."""
    for found in serve(TWO_SHARES):
        monkeypatch.setenv("AWS_ENDPOINT_URL", found.url)
        yield found


@pytest.fixture
def running_endpoint(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """:data:`TWO_SHARES` with time running 50x faster than real time."""
    for found in serve(TWO_SHARES, time_scale=50.0):
        monkeypatch.setenv("AWS_ENDPOINT_URL", found.url)
        yield found


async def drive(
    endpoint: Endpoint,
    *streams: AsyncIterator[Any],
    step: float,
    started_by: str = "batch.DescribeServiceJob",
) -> list[Any]:
    """Collect every stream's events while moving emulated time ``step`` seconds every 20 ms.

    Time starts once the endpoint has answered one ``started_by`` request, so
    a trigger sees the first status before time moves.
    """
    collected: list[Any] = []

    async def consume_one(events: AsyncIterator[Any]) -> None:
        async for event in events:
            collected.append(event)

    async def consume() -> None:
        await asyncio.gather(*(consume_one(events) for events in streams))

    def describes() -> int:
        counts = endpoint.stats()["operations"].get(started_by, {})
        return sum(counts.values())

    task = asyncio.create_task(consume())
    first = await asyncio.to_thread(describes)
    while not task.done() and await asyncio.to_thread(describes) == first:
        await asyncio.sleep(0.01)
    while not task.done():
        await asyncio.sleep(0.02)
        await asyncio.to_thread(endpoint.advance, step)
    await task
    return collected


def once(condition: Callable[[], bool], action: Callable[[], object]) -> threading.Thread:
    """A thread that does ``action`` as soon as ``condition`` holds (checked every 10 ms, 60 s)."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if condition():
                action()
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


TaskLog = Callable[[], str]
"""What the run logged since the last call (see :func:`task_log`)."""


@pytest.fixture
def task_log(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> TaskLog:
    """What a ``dag.test()`` run logged since the last call: a task's log lines reach
    stdout on Airflow 3.3 and 2.11, Python's logging on 3.0."""

    def read() -> str:
        captured = capsys.readouterr()
        text = captured.out + captured.err + caplog.text
        caplog.clear()
        return text

    return read


def run_dag_file(dag_id: str, source: str, **test: Any) -> Any:
    """Write ``source`` (defining ``dag``) to the dags folder, ``dag.test(**test)`` it; the DAG run.

    ``dag.test()`` in Airflow 3.3 runs only DAGs it can serialize from the
    DAG bundle, so the DAG is written to a file in the dags folder first.
    """
    folder = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dag_id}.py"
    path.write_text(source)
    try:
        spec = importlib.util.spec_from_file_location(dag_id, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.dag.test(**test)
    finally:
        path.unlink()


def reclaim_once_running(endpoint: Endpoint, job_name: str, batch: Any = None) -> threading.Thread:
    """Once ``job_name`` holds capacity, an nlp job (not from Airflow) of 2 p4d takes back nlp's.

    With :data:`TWO_SHARES`, a vision job of 3 p4d borrows one of nlp's: it is preempted.
    """
    client = batch or endpoint.client("batch")
    by_name = [{"name": "JOB_NAME", "values": [job_name]}]

    def holding() -> bool:
        jobs = client.list_service_jobs(jobQueue=QUEUE, filters=by_name)["jobSummaryList"]
        return any(job["status"] in ("SCHEDULED", "STARTING", "RUNNING") for job in jobs)

    return once(holding, lambda: submit(client, "nlp", 2, duration=30, name="owner"))
