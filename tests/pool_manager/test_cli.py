"""``airflow-quota pool-manager``: bad input and an unreachable Airflow, without Airflow running."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.connection import PASSWORD_VARIABLE
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials, GatewayError
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.cli import main
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.core.builders import queue, share

HERE = Path(__file__).resolve().parent


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_a_bad_config_is_reported_by_path_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "fleet.yaml"
    config.write_text(
        "job_queue: gpus\ncapacity: {gpu: 4}\nshares: [{name: a, capacity: {gpu: 9}}]\n"
    )
    code = main(
        ["pool-manager", "--config", str(config), "--api-url", "http://x", "--username", "u"]
    )
    assert code == 1
    assert "shares[0].capacity.gpu" in capsys.readouterr().err


def test_api_url_without_a_user_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["pool-manager", "--config", str(HERE / "fleet.yaml"), "--api-url", "http://x"])
    assert code == 1
    assert "--api-url needs --username" in capsys.readouterr().err


def test_a_missing_connection_says_how_to_define_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_NO_SUCH_API", raising=False)
    code = main(["pool-manager", "--config", str(HERE / "fleet.yaml"), "--conn-id", "no_such_api"])
    assert code == 1
    assert (
        "no Airflow connection 'no_such_api': define it (e.g. "
        "AIRFLOW_CONN_NO_SUCH_API=http://USER:PASSWORD@HOST:PORT) or pass --api-url and --username"
    ) in capsys.readouterr().err


@pytest.mark.parametrize("interval", ["0", "-1", "soon"])
def test_the_interval_must_be_positive_seconds(interval: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_quota_provider.cli",
            "pool-manager",
            "--config",
            "x",
            "--interval",
            interval,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "argument --interval:" in done.stderr and "Traceback" not in done.stderr


def test_an_unreachable_api_is_a_clear_error_naming_it() -> None:
    url = closed_port()
    gateway = AirflowGateway(url, Credentials("manager", "secret"), timeout=2)
    with pytest.raises(GatewayError, match=f"log in: Airflow's API at {url} is unreachable"):
        gateway.pools()


def test_the_manager_waits_with_growing_delays_while_airflow_is_away_and_never_logs_secrets(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    fleet = Fleet.of(queue(share("a").capacity(gpu=4).lend_and_borrow(), gpu=4))
    gateway = AirflowGateway(closed_port(), Credentials("manager", "s3cret-pw"), timeout=1)
    attempts: list[int] = []

    def should_stop() -> bool:
        attempts.append(gateway.calls)
        return gateway.calls >= 2

    with caplog.at_level(logging.WARNING):
        PoolManager(fleet, gateway, Store(f"sqlite:///{tmp_path / 'pm.db'}")).run(0.05, should_stop)
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith("manager")]
    assert len(warnings) == 2
    assert "no pool grows meanwhile; retrying in 0.1 s" in warnings[0]
    assert "retrying in 0.2 s" in warnings[1]
    assert all("s3cret-pw" not in w for w in warnings)
    assert "password=***" in repr(gateway.credentials)


def test_a_config_for_aws_batch_is_not_run_by_the_pool_manager(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = str(HERE.parents[1] / "dags" / "quota.yaml")
    code = main(["pool-manager", "--config", config, "--api-url", "http://x", "--username", "u"])
    assert code == 1
    assert capsys.readouterr().err == (
        f"{config}: backend: the pool manager runs a config with backend: airflow_pools; "
        "this one's is aws_batch\n"
    )


def test_a_username_without_the_password_variable_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(PASSWORD_VARIABLE, raising=False)
    base = ["pool-manager", "--config", str(HERE / "fleet.yaml")]
    assert main([*base, "--api-url", "http://x", "--username", "quota-manager"]) == 1
    assert capsys.readouterr().err == (
        "airflow-quota pool-manager: $AIRFLOW_QUOTA_API_PASSWORD is not set: --username "
        "quota-manager logs in with the password it holds (never given on the command line, "
        "where ps shows it)\n"
    )


def test_aws_options_without_watching_sagemaker_are_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(PASSWORD_VARIABLE, "secret")
    base = ["pool-manager", "--config", str(HERE / "fleet.yaml")]
    code = main([*base, "--api-url", "http://x", "--username", "u", "--endpoint-url", "http://y"])
    assert code == 1
    assert (
        "--aws-conn-id, --region and --endpoint-url are for --watch-sagemaker, which is not given"
    ) in capsys.readouterr().err


def test_watching_sagemaker_without_a_region_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv(PASSWORD_VARIABLE, "secret")
    base = ["pool-manager", "--config", str(HERE / "fleet.yaml")]
    code = main([*base, "--api-url", "http://x", "--username", "u", "--watch-sagemaker"])
    assert code == 1
    assert "the SageMaker client: NoRegionError" in capsys.readouterr().err
