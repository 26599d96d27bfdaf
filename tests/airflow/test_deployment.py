"""``docker-compose.yaml`` and ``Dockerfile``, checked as far as a machine without Docker allows.

No Docker engine runs here, so no image is built and no container started.
What is checked: the file's structure, that every Airflow command and
setting it uses exists in the installed Airflow, that the AWS connection
points at the endpoint service, that the endpoint's and the pool managers'
commands parse with our own CLI and the Celery workers' with Airflow's (the
``celery`` profile), that every mounted path exists, and, where a compose
client is installed, that ``docker compose config`` accepts the file.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
AIRFLOW_SERVICES = {
    "airflow-init": ["db", "migrate"],
    "airflow-api-server": ["api-server"],
    "airflow-scheduler": ["scheduler"],
    "airflow-dag-processor": ["dag-processor"],
    "airflow-triggerer": ["triggerer"],
}


CELERY = ("redis", "airflow-worker", "airflow-worker-gpu", "pool-manager-2")
"""The services of ``--profile celery``."""


COMPOSE_TEXT = (ROOT / "docker-compose.yaml").read_text()


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
    return loaded


def test_the_services_are_the_deployment(compose: dict[str, Any]) -> None:
    services = compose["services"]
    base = {"postgres", "aws-endpoint", "pool-manager", "pool-manager-db", *AIRFLOW_SERVICES}
    assert {name for name, service in services.items() if "profiles" not in service} == base
    assert {name for name, service in services.items() if "profiles" in service} == set(CELERY)
    assert all(services[name]["profiles"] == ["celery"] for name in CELERY)
    for name, command in AIRFLOW_SERVICES.items():
        assert services[name]["command"] == command
        assert services[name]["build"] == "."
        assert services[name]["volumes"][0] == "./dags:/opt/airflow/dags"
    for name, service in services.items():
        for needed in service.get("depends_on", {}):
            assert needed in services, f"{name} depends on unknown service {needed}"
    # published on loopback only: the login and the JWT secret are examples
    assert services["airflow-api-server"]["ports"] == ["127.0.0.1:8080:8080"]
    assert services["aws-endpoint"]["ports"] == ["127.0.0.1:4599:4599"]


def test_airflow_commands_exist_in_the_installed_airflow() -> None:
    from airflow.cli.cli_parser import get_parser

    parser = get_parser()
    for command in AIRFLOW_SERVICES.values():
        parser.parse_args(command)


def test_every_airflow_setting_is_a_known_option(compose: dict[str, Any]) -> None:
    from airflow.configuration import conf

    from airflow_quota_provider import get_provider_info

    ours = get_provider_info()["config"]
    env = compose["services"]["airflow-scheduler"]["environment"]
    for key in env:
        match = re.fullmatch(r"AIRFLOW__([A-Z_]+?)__([A-Z_]+)", key)
        if match is None:
            continue
        section, option = match.group(1).lower(), match.group(2).lower()
        described = conf.configuration_description.get(section) or ours.get(section) or {}
        known = option in described.get("options", {})
        assert known, f"{key}: [{section}] {option} is not an Airflow option"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].endswith("@postgres/airflow")


def test_the_aws_connection_points_at_the_endpoint_service(compose: dict[str, Any]) -> None:
    from airflow.models.connection import Connection

    env = compose["services"]["airflow-triggerer"]["environment"]
    connection = Connection(conn_id="aws_default", uri=env["AIRFLOW_CONN_AWS_DEFAULT"])
    assert connection.conn_type == "aws"
    endpoint = compose["services"]["aws-endpoint"]
    port = next(arg for arg in endpoint["command"] if arg.startswith("--port=")).split("=")[1]
    assert connection.extra_dejson["endpoint_url"] == f"http://aws-endpoint:{port}"


def test_the_endpoint_command_parses_and_its_config_is_valid(compose: dict[str, Any]) -> None:
    from airflow_quota_provider.cli import build_parser
    from airflow_quota_provider.config_file import load_config

    command = compose["services"]["aws-endpoint"]["command"]
    assert command[0] == "airflow-quota"
    args = build_parser().parse_args(command[1:])
    assert args.host == "0.0.0.0"
    container_config = Path(args.config)
    assert container_config == Path("/opt/airflow/dags/quota.yaml")
    load_config(ROOT / "dags" / "quota.yaml")


def test_the_pool_manager_command_parses_and_reaches_the_services(
    compose: dict[str, Any],
) -> None:
    from airflow_quota_provider.cli import build_parser
    from airflow_quota_provider.config_file import load_config
    from airflow_quota_provider.core.model import Backend

    manager = compose["services"]["pool-manager"]
    assert manager["command"][:2] == ["airflow-quota", "pool-manager"]
    args = build_parser().parse_args(manager["command"][1:])
    assert Path(args.config) == Path("/opt/airflow/dags/pools_quota.yaml")
    assert load_config(ROOT / "dags" / "pools_quota.yaml").backend is Backend.AIRFLOW_POOLS
    api = compose["services"]["airflow-api-server"]
    assert args.api_url == f"http://airflow-api-server:{api['ports'][0].rsplit(':', 1)[1]}"
    assert args.watch_sagemaker
    # the password comes from the environment, never the command line
    assert "AIRFLOW_QUOTA_API_PASSWORD" in manager["environment"]
    assert not any("password" in arg for arg in manager["command"])
    assert manager["environment"]["AWS_ENDPOINT_URL"] == "http://aws-endpoint:4599"
    limit = "--instance-limit=ml.p4d.24xlarge=8"
    assert limit in compose["services"]["aws-endpoint"]["command"]


def test_the_celery_profile_runs_two_workers_on_other_queues_and_managers_in_ha(
    compose: dict[str, Any],
) -> None:
    """``AIRFLOW_EXECUTOR=CeleryExecutor docker compose --profile celery up``: the workers'
    commands parse with the installed Airflow's parser, the second manager's with ours, and
    both managers share one PostgreSQL database, which ``pool-manager-db`` makes."""
    from airflow.cli.cli_parser import get_parser
    from airflow.executors.executor_constants import CORE_EXECUTOR_NAMES
    from airflow.providers.celery.executors import celery_executor

    from airflow_quota_provider.cli import build_parser

    services = compose["services"]
    env = services["airflow-scheduler"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "${AIRFLOW_EXECUTOR:-LocalExecutor}"
    # the run the file's header shows names an executor Airflow knows, and it is installed
    run = re.search(r"AIRFLOW_EXECUTOR=(\w+) docker compose --profile celery up", COMPOSE_TEXT)
    assert run is not None and run.group(1) in CORE_EXECUTOR_NAMES
    assert hasattr(celery_executor, run.group(1))
    assert env["AIRFLOW__CELERY__BROKER_URL"] == "redis://redis:6379/0"
    for module in json.loads(env["AIRFLOW__CELERY__EXTRA_CELERY_CONFIG"])["imports"]:
        assert importlib.util.find_spec(module) is not None, module
    parser = get_parser()
    queues = []
    for name in ("airflow-worker", "airflow-worker-gpu"):
        worker = services[name]
        assert worker["environment"] == env and "redis" in worker["depends_on"]
        assert worker["command"][:2] == ["celery", "worker"]
        args = parser.parse_args(worker["command"])
        assert args.concurrency == 8
        queues.append(args.queues)
    assert queues == ["default", "gpu"]
    first, second = services["pool-manager"], services["pool-manager-2"]
    assert second["command"] == first["command"] and second["environment"] == first["environment"]
    args = build_parser().parse_args(second["command"][1:])
    assert args.database == "postgresql+psycopg2://airflow:airflow@postgres/quota_manager"
    assert "CREATE DATABASE quota_manager" in services["pool-manager-db"]["command"][-1]
    assert first["depends_on"]["pool-manager-db"]["condition"] == "service_completed_successfully"


def test_mounted_files_exist_and_the_image_matches_the_package(compose: dict[str, Any]) -> None:
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), volume
    dockerfile = (ROOT / "Dockerfile").read_text()
    image = re.search(r"^FROM apache/airflow:(\d+)\.(\d+)\.\d+-python3\.11$", dockerfile, re.M)
    assert image is not None
    assert (int(image.group(1)), int(image.group(2))) >= (3, 3)


def test_a_compose_client_accepts_the_file() -> None:
    client = _compose_client()
    if client is None:
        pytest.skip("no docker compose client here: the file was checked without it")
    done = subprocess.run(
        [*client, "-f", str(ROOT / "docker-compose.yaml"), "config", "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _compose_client() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None
