"""``airflow-quota emulator`` as users start it, and ``local_endpoint`` as tests and demos do."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_quota_provider.cli import main
from airflow_quota_provider.cli.emulator import parse_limits
from airflow_quota_provider.emulator import EmulatorServer, local_endpoint
from tests.emulator.conftest import P4D, TWO_SHARES, make_client

CONFIG = """\
job_queue: demo
capacity: {ml.p4d.24xlarge: 4}
shares:
  - {name: nlp, capacity: {ml.p4d.24xlarge: 2}, sharing: LEND_AND_BORROW, borrow_limit: 50}
  - {name: eval, capacity: {ml.p4d.24xlarge: 2}, sharing: RESERVE}
"""


def test_the_command_serves_the_config_until_stopped(tmp_path: Path) -> None:
    config = tmp_path / "quota.yaml"
    config.write_text(CONFIG)
    command = [sys.executable, "-m", "airflow_quota_provider.cli", "emulator", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--time-scale", "0", "--config", str(config)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving Batch and SageMaker on http://127.0.0.1:")
        url = line.split()[5]
        batch = make_client(url, "batch")
        shares = batch.list_quota_shares(jobQueue="demo")["quotaShares"]
        assert [(s["quotaShareName"], s["resourceSharingConfiguration"]) for s in shares] == [
            ("eval", {"strategy": "RESERVE"}),
            ("nlp", {"strategy": "LEND_AND_BORROW", "borrowLimit": 50}),
        ]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_an_invalid_config_is_reported_by_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "quota.yaml"
    config.write_text(
        "job_queue: demo\ncapacity: {gpu: 1}\nshares: [{name: a, capacity: {gpu: 2}}]\n"
    )
    assert main(["emulator", "--config", str(config), "--port", "0"]) == 1
    assert str(config) in capsys.readouterr().err


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulator", "--time-scale", "-1"]) == 2
    assert main(["emulator", "--instance-limit", "ml.p4d.24xlarge"]) == 2
    err = capsys.readouterr().err
    assert "--time-scale must be >= 0, got -1" in err
    assert "--instance-limit expects TYPE=COUNT, got 'ml.p4d.24xlarge'" in err


def test_instance_limits_parse() -> None:
    assert parse_limits([f"{P4D}=16", "ml.g5.12xlarge=2"]) == {P4D: 16, "ml.g5.12xlarge": 2}
    with pytest.raises(ValueError):
        parse_limits([f"{P4D}=many"])


def test_local_endpoint_yields_a_url_and_stops_cleanly() -> None:
    with local_endpoint(TWO_SHARES, time_scale=0) as url:
        batch = make_client(url, "batch")
        assert batch.describe_job_queues()["jobQueues"][0]["jobQueueName"] == "ml-training"
    with pytest.raises(Exception):  # noqa: B017 - any connection error: the server is gone
        make_client(url, "batch", connect_timeout=1).describe_job_queues()


@pytest.mark.parametrize(
    ("port", "message"),
    [
        ("99999", "must be from 0 to 65535 (0 picks a free port), got 99999"),
        ("65536", "must be from 0 to 65535 (0 picks a free port), got 65536"),
        ("-1", "must be from 0 to 65535 (0 picks a free port), got -1"),
        ("http", "must be a whole number from 0 to 65535, got 'http'"),
    ],
)
def test_a_port_out_of_range_is_an_argument_error(
    port: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["emulator", "--port", port])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"airflow-quota emulator: error: argument --port: {message}"


def test_a_port_in_use_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        state = tmp_path / "state.sqlite"
        command = [sys.executable, "-m", "airflow_quota_provider.cli", "emulator"]
        done = subprocess.run(
            [*command, "--port", str(port), "--state", str(state)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"cannot listen on 127.0.0.1:{port}: Address already in use "
        "(another process listens there: choose another --port, or --port 0 for a free one)\n"
    )


def test_an_address_this_machine_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    # 192.0.2.0/24 is reserved for documentation: no interface here has it, and binding
    # to it fails at once without sending anything.
    assert main(["emulator", "--host", "192.0.2.1", "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        "cannot listen on 192.0.2.1:0: Cannot assign requested address\n"
    )


def test_the_library_server_refuses_a_port_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"^port must be from 0 to 65535, got 70000$"):
        EmulatorServer(port=70000)
