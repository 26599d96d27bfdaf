"""Real Airflow processes and the pool manager, for the end-to-end tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_quota_provider.demo.airflow_api import AirflowApi, AirflowApiError
from airflow_quota_provider.demo.processes import Processes, wait_for
from airflow_quota_provider.demo.stack import Stack, StackSettings

HERE = Path(__file__).resolve().parent


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
) -> Iterator[Stack]:
    """api-server, scheduler, dag-processor, triggerer and ``airflow-quota pool-manager``
    (1 s cycles), with the DAGs of ``dags/`` parsed and the config's pools created.

    :param password: the Airflow user's; the manager and the ``airflow_api_default``
        connection log in with it.
    :param emulator_args: more options for the local AWS endpoint.
    :param manager_args: more options for the manager, e.g. ``("--watch-sagemaker",)``.
    :param interval: seconds between the manager's cycles.
    """
    settings = StackSettings(
        workdir=workdir,
        dags_folder=HERE / "dags",
        quota_config=config,
        extra_env=extra_env or {},
        database_url=database_url,
        password=password,
        emulator_args=emulator_args,
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


def trigger(api: AirflowApi, dag_id: str, seconds: float) -> str:
    body = {"logical_date": None, "conf": {"seconds": seconds}}
    return str(api.post(f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"])


def wait_state(
    stack: Stack, dag_id: str, run_id: str, state: str, what: str, timeout: float = 120
) -> None:
    """Wait until the ``train`` task of a run is in ``state``."""

    def reached() -> bool:
        return task_instance(stack.api, dag_id, run_id, "train")["state"] == state

    wait_for(what, reached, timeout, stack.processes)
