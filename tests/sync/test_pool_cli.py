"""``airflow-quota plan`` / ``apply`` choosing between AWS Batch and a pools fleet, and the
ways a pools fleet's sync fails before Airflow answers (no Airflow running here)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.cli import main
from airflow_quota_provider.exceptions import ConfigError, Problem
from airflow_quota_provider.sync.target import SyncTarget, parse_target
from tests.emulator.conftest import Endpoint
from tests.sync.test_sync_endpoint import CONFIG as BATCH_CONFIG

FLEET = str(Path(__file__).resolve().parents[1] / "pool_manager" / "fleet.yaml")
POOLS = {
    "backend": "airflow_pools",
    "job_queue": "gpus",
    "capacity": {"gpu": 4},
    "shares": [{"name": "nlp", "capacity": {"gpu": 4}}],
}


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_a_pools_config_is_a_fleet_and_a_batch_config_a_target() -> None:
    fleet = parse_target(POOLS)
    assert isinstance(fleet, Fleet) and list(fleet) == ["quota-nlp-gpu"]
    assert isinstance(parse_target({**POOLS, "backend": "aws_batch"}), SyncTarget)


def test_the_aws_batch_names_are_refused_for_a_pools_config_with_the_configs_problems() -> None:
    data = {
        **POOLS,
        "shares": [{"name": "nlp", "capacity": {"gpu": 5}}],
        "scheduling_policy": 7,
        "job_queue_priority": 3,
    }
    with pytest.raises(ConfigError) as raised:
        parse_target(data)
    batch_only = (
        "is only for backend aws_batch (a resource of the AWS Batch job queue); this config's "
        "backend is airflow_pools, whose pools are named by pools"
    )
    assert [p.path for p in raised.value.problems] == [
        "shares[0].capacity.gpu",
        "scheduling_policy",
        "job_queue_priority",
    ]
    assert raised.value.problems[1:] == (
        Problem("scheduling_policy", batch_only),
        Problem("job_queue_priority", batch_only),
    )


def test_a_pools_fleet_without_a_connection_says_how_to_define_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_AIRFLOW_API_DEFAULT", raising=False)
    assert main(["plan", FLEET]) == 1
    assert capsys.readouterr().err == (
        "error: no Airflow connection 'airflow_api_default': define it (e.g. "
        "AIRFLOW_CONN_AIRFLOW_API_DEFAULT=http://USER:PASSWORD@HOST:PORT) or pass --api-url "
        "and --username\n"
    )


def test_a_pools_fleet_uses_the_connection_it_is_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = closed_port()
    host = url.removeprefix("http://")
    monkeypatch.setenv("AIRFLOW_CONN_QUOTA_API", f"http://manager:secret@{host}")
    assert main(["apply", FLEET, "--conn-id", "quota_api"]) == 1
    # the last line: Airflow's logging, set up by an earlier test's capture, may write before
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"error: log in: Airflow's API at {url} is unreachable (")
    assert err.endswith("); nothing was changed")
    assert "secret" not in err


def test_an_unreachable_airflow_is_named_and_nothing_is_changed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = closed_port()
    monkeypatch.setenv("AIRFLOW_QUOTA_API_PASSWORD", "secret")
    assert main(["apply", FLEET, "--api-url", url, "--username", "manager"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: log in: Airflow's API at {url} is unreachable (")
    assert err.endswith("); nothing was changed\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--endpoint-url", "http://x", "--region", "eu-west-1"],
            "--region, --endpoint-url: for a config with backend aws_batch; {file} has backend "
            "airflow_pools",
        ),
        (
            ["--aws-conn-id", "aws_default"],
            "--aws-conn-id: for a config with backend aws_batch; {file} has backend airflow_pools",
        ),
    ],
    ids=["endpoint and region", "an AWS connection"],
)
def test_aws_options_are_refused_for_a_pools_fleet(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", FLEET, *argv]) == 1
    assert capsys.readouterr().err == f"error: {message.format(file=FLEET)}\n"


def test_airflow_options_are_refused_for_aws_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "quota.yaml"
    path.write_text(BATCH_CONFIG)
    assert main(["apply", str(path), "--conn-id", "x", "--username", "u"]) == 1
    assert capsys.readouterr().err == (
        f"error: --conn-id, --username: for a config with backend airflow_pools; {path} has "
        "backend aws_batch\n"
    )


def test_plan_and_apply_of_an_aws_batch_config_work_as_before(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "quota.yaml"
    path.write_text(BATCH_CONFIG)
    endpoint = ["--endpoint-url", bare_endpoint.url]
    assert main(["plan", str(path), *endpoint]) == 2
    out = capsys.readouterr().out.splitlines()
    assert (out[0], out[-1]) == (
        "Plan for job queue ml-training:",
        "Plan: 5 to create, 0 to update, 0 to delete.",
    )
    assert main(["apply", str(path), *endpoint]) == 0
    capsys.readouterr()
    assert main(["plan", str(path), *endpoint]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Plan for job queue ml-training:",
        "No changes: AWS matches the config.",
    ]
