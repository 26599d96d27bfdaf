"""The local AWS endpoint and a real Airflow (api-server, scheduler, dag-processor, triggerer).

Everything lives under one work folder: the endpoint's state file, Airflow's
home, its SQLite metadata DB (unless a database URL is given) and one log
file per process. The Airflow processes share one environment, built here,
which points the ``aws_default`` connection at the endpoint.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from airflow_quota_provider.demo.airflow_api import AirflowApi, AirflowApiError
from airflow_quota_provider.demo.ports import free_port
from airflow_quota_provider.demo.processes import Managed, Processes, tail, wait_for

AIRFLOW_COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
SECRET_CHECK = "airflow_quota_fernet_check"
"""The connection and the Variable each stack stores through Airflow at start."""
_CELERY_PRELOAD = ("airflow.sdk.execution_time.task_runner", "airflow_quota_provider.view.plugin")


@dataclass(frozen=True)
class StackSettings:
    """What to run and where.

    :param workdir: the run's folder; created if missing.
    :param dags_folder: the DAGs Airflow runs.
    :param quota_config: the quota config the endpoint starts with.
    :param time_scale: emulated seconds per real second on the endpoint.
    :param database_url: Airflow's metadata DB; ``None`` = SQLite in ``workdir``.
    :param poll_interval: seconds between the triggers' status checks.
    :param api_port: the api-server's port; 0 picks a free one.
    :param emulator_args: more options for the endpoint, e.g.
        ``("--instance-limit", "ml.p4d.24xlarge=4")``.
    :param executor: Airflow's executor: ``LocalExecutor`` (the scheduler runs the
        tasks) or ``CeleryExecutor`` (workers started with
        :meth:`Stack.start_celery_worker` run them; needs ``celery_broker_url`` and a
        ``database_url``, as Celery keeps its results in Airflow's database).
    :param celery_broker_url: the Celery broker, e.g. ``redis://127.0.0.1:6379/3``.
    """

    workdir: Path
    dags_folder: Path
    quota_config: Path
    time_scale: float = 60.0
    database_url: str | None = None
    poll_interval: float = 2.0
    api_port: int = 0
    username: str = "admin"
    password: str = "admin"
    extra_env: dict[str, str] = field(default_factory=dict)
    emulator_args: tuple[str, ...] = ()
    executor: str = "LocalExecutor"
    celery_broker_url: str | None = None

    def __post_init__(self) -> None:
        if self.executor == "CeleryExecutor" and not (self.celery_broker_url and self.database_url):
            raise ValueError(
                "the CeleryExecutor needs celery_broker_url (its broker) and database_url "
                "(Celery keeps its results in Airflow's database; SQLite cannot serve it)"
            )


class Stack:
    """Starts the endpoint and Airflow under :class:`Processes`, which stops them all."""

    def __init__(self, settings: StackSettings, processes: Processes) -> None:
        self.settings = settings
        self.processes = processes
        self.emulator_url = f"http://127.0.0.1:{free_port()}"
        self.api_url = f"http://127.0.0.1:{settings.api_port or free_port()}"
        self.api = AirflowApi(self.api_url, settings.username, settings.password)
        self.env = self._airflow_env()
        self._log_offsets: dict[str, int] = {}

    @property
    def home(self) -> Path:
        return self.settings.workdir / "airflow"

    def start(self, dag_ids: tuple[str, ...] = ()) -> None:
        """Start everything; return once the api-server answers and ``dag_ids`` are parsed."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._start_emulator()
        self._prepare()
        for component in AIRFLOW_COMPONENTS:
            self.start_component(component)
        wait_for("the Airflow api-server", self.api.healthy, 180, self.processes)
        self.store_secrets()
        for dag_id in dag_ids:
            wait_for(
                f"DAG {dag_id} to be parsed",
                partial(self.api.has_dag, dag_id),
                180,
                self.processes,
            )

    def start_api_server(self) -> None:
        """Only Airflow's database and api-server: its REST API, and no task ever runs."""
        self._prepare()
        self.start_component("api-server")
        wait_for("the Airflow api-server", self.api.healthy, 180, self.processes)
        self.store_secrets()

    def store_secrets(self) -> None:
        """Store a connection with a password and a Variable through the api-server and read
        them back, as a deployment does: both take Airflow's fernet (a key is set), which
        some installations cannot use (``airflow-quota doctor`` names them)."""
        connection = {"connection_id": SECRET_CHECK, "conn_type": "aws", "login": "key"}
        variable = {"key": SECRET_CHECK, "value": "stored encrypted"}
        try:
            self.api.post("/api/v2/connections", {**connection, "password": "secret"})
            self.api.post("/api/v2/variables", variable)
            read = self.api.get(f"/api/v2/variables/{SECRET_CHECK}")["value"]
            self.api.get(f"/api/v2/connections/{SECRET_CHECK}")
        except AirflowApiError as error:
            raise RuntimeError(
                f"Airflow cannot store a connection's password or a Variable ({error}): "
                "`airflow-quota doctor` tells what in this installation breaks it"
            ) from error
        if read != variable["value"]:
            raise RuntimeError(f"Airflow read Variable {SECRET_CHECK} back as {read!r}")

    def start_component(self, component: str) -> None:
        command = [sys.executable, "-m", "airflow", component]
        if component == "api-server":
            command += ["--port", self.api_url.rsplit(":", 1)[1], "--host", "127.0.0.1"]
        self.processes.start(component, command, self.env, cwd=self.settings.workdir)

    def start_pool_manager(
        self, config: Path, *options: str, interval: float = 1, database: str | None = None
    ) -> str:
        """Start ``airflow-quota pool-manager`` for the pools fleet of ``config``, logged in as
        this stack's Airflow user; its database (SQLite in the work folder by default) is
        returned. ``options``: more options, e.g. ``"--watch-sagemaker"``."""
        database = (
            database or f"sqlite:///{self.settings.workdir / 'airflow-quota-pool-manager.db'}"
        )
        env = {**self.env, "AIRFLOW_QUOTA_API_PASSWORD": self.settings.password}
        command = [
            *(sys.executable, "-m", "airflow_quota_provider.cli", "pool-manager"),
            *("--config", str(config), "--api-url", self.api_url),
            *("--username", self.settings.username, "--interval", f"{interval:g}"),
            *("--database", database),
            *options,
        ]
        self.processes.start("pool-manager", command, env, cwd=self.settings.workdir)
        return database

    def start_celery_worker(
        self,
        name: str,
        queues: Sequence[str],
        concurrency: int,
        env: Mapping[str, str] | None = None,
    ) -> Managed:
        """Start ``airflow celery worker`` as the process ``name`` (also its Celery node
        name, ``name@<host>``), serving ``queues`` with ``concurrency`` task slots.
        ``env``: more environment for it (its tasks inherit it). Returns at once:
        :meth:`wait_celery_worker` waits until it takes tasks.
        """
        command = [
            *(sys.executable, "-m", "airflow", "celery", "worker"),
            *("--queues", ",".join(queues), "--concurrency", str(concurrency)),
            *("--celery-hostname", f"{name}@%h"),
        ]
        # each worker serves its tasks' logs on a port of its own
        port = {"AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port())}
        self._log_offsets[name] = _size(self.processes.log_dir / f"{name}.log")
        return self.processes.start(
            name, command, {**self.env, **port, **(env or {})}, cwd=self.settings.workdir
        )

    def restart_celery_worker(self, name: str) -> Managed:
        """Start the Celery worker ``name`` again as it was first started (stopping it
        first if it runs). Returns at once, as :meth:`start_celery_worker`."""
        self._log_offsets[name] = _size(self.processes.log_dir / f"{name}.log")
        return self.processes.restart(name)

    def wait_celery_worker(self, name: str, timeout: float = 120) -> None:
        """Wait until the Celery worker ``name``, as last (re)started, takes tasks."""
        log_path = self.processes.log_dir / f"{name}.log"
        offset = self._log_offsets.get(name, 0)

        def ready() -> bool:
            # the worker's log goes on across restarts: only what this start wrote counts
            with log_path.open("rb") as log:
                log.seek(offset)
                return b" ready." in log.read()

        wait_for(f"the Celery worker {name}", ready, timeout, self.processes)

    def clock(self) -> dict[str, Any]:
        """The endpoint's clock: ``now``, ``now_millis``, ``time_scale``."""
        with urllib.request.urlopen(f"{self.emulator_url}/_emulator/clock", timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def now_millis(self) -> int:
        return int(self.clock()["now_millis"])

    def set_time_scale(self, time_scale: float) -> None:
        body = json.dumps({"time_scale": time_scale}).encode()
        request = urllib.request.Request(
            f"{self.emulator_url}/_emulator/clock", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10):
            pass

    def _start_emulator(self) -> None:
        port = self.emulator_url.rsplit(":", 1)[1]
        state = self.settings.workdir / "emulator.sqlite"
        command = [
            sys.executable,
            "-m",
            "airflow_quota_provider.cli",
            "emulator",
            "--port",
            port,
            "--config",
            str(self.settings.quota_config),
            "--time-scale",
            f"{self.settings.time_scale:g}",
            "--state",
            str(state),
            *self.settings.emulator_args,
        ]
        self.processes.start("emulator", command, self.env, cwd=self.settings.workdir)
        wait_for("the local AWS endpoint", self._emulator_up, 60, self.processes, every=0.2)

    def _emulator_up(self) -> bool:
        self.clock()  # wait_for takes a refused connection as "not yet"
        return True

    def _prepare(self) -> None:
        """Airflow's home, its migrated database and the user's password file."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._migrate()
        (self.home / "passwords.json").write_text(
            json.dumps({self.settings.username: self.settings.password})
        )

    def _migrate(self) -> None:
        log_path = self.settings.workdir / "logs" / "db-migrate.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("wb") as output:
            done = subprocess.run(
                [sys.executable, "-m", "airflow", "db", "migrate"],
                env=self.env,
                stdout=output,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed (see {log_path}):\n{tail(log_path)}")

    def _airflow_env(self) -> dict[str, str]:
        settings = self.settings
        database = settings.database_url or f"sqlite:///{self.home / 'airflow.db'}"
        endpoint = urllib.parse.quote(self.emulator_url, safe="")
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AWS_"))
        }
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__EXECUTOR": settings.executor,
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database,
                "AIRFLOW__CORE__DAGS_FOLDER": str(settings.dags_folder),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.api_url}/execution/",
                "AIRFLOW__API__BASE_URL": self.api_url,
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
                "AIRFLOW__CORE__FERNET_KEY": _fernet_key(),
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{settings.username}:admin",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(
                    self.home / "passwords.json"
                ),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                # the workers' and the triggerer's log servers: not the fixed defaults,
                # which a second Airflow on this machine would hold already
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
                "AIRFLOW__QUOTA_PROVIDER__POLL_INTERVAL": f"{settings.poll_interval:g}",
                # at an accelerated clock the GPU Quotas view must not lag behind
                "AIRFLOW__QUOTA_PROVIDER__VIEW_CACHE_SECONDS": "2",
                "AIRFLOW_CONN_AWS_DEFAULT": (
                    f"aws://testing:testing@/?region_name=us-east-1&endpoint_url={endpoint}"
                ),
                "AWS_ENDPOINT_URL": self.emulator_url,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
            }
        )
        if settings.celery_broker_url is not None:
            env["AIRFLOW__CELERY__BROKER_URL"] = settings.celery_broker_url
            # A worker forks each task from a pool process that has not loaded Airflow's
            # plugins or the task runner: each task would import them anew (this provider's
            # plugin brings Airflow's API app, ~2 s of CPU). Imported once, before the fork.
            env["AIRFLOW__CELERY__EXTRA_CELERY_CONFIG"] = json.dumps(
                {"imports": [*_CELERY_PRELOAD]}
            )
        env.update(settings.extra_env)
        return env


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()
