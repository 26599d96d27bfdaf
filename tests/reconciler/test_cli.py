"""``airflow-quota reconcile``: bad input, without Airflow or AWS running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_quota_provider.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--grace", "-1", "argument --grace: must be 0 or more seconds, got -1"),
        ("--grace", "soon", "argument --grace: expected seconds, got 'soon'"),
        ("--interval", "0", "argument --interval: must be more than 0 seconds, got 0"),
    ],
)
def test_bad_seconds_are_usage_errors(option: str, value: str, message: str) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "airflow_quota_provider.cli", "reconcile"),
            *("--config", "x", option, value),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_bad_config_is_reported_by_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "quota.yaml"
    config.write_text("job_queue: q\ncapacity: {gpu: 4}\nshares: [{name: a, capacity: {gpu: 9}}]\n")
    assert main(["reconcile", "--config", str(config), "--api-url", "http://x"]) == 1
    assert "shares[0].capacity.gpu" in capsys.readouterr().err


def test_api_url_without_a_user_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(ROOT / "dags" / "quota.yaml")
    assert main(["reconcile", "--config", config, "--api-url", "http://x"]) == 1
    assert "--api-url needs --username" in capsys.readouterr().err
