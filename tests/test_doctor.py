"""``airflow-quota doctor`` run as users run it, in the installation the tests run in (each
Airflow line's own, in its compatibility runs), and with packages known to break a line
laid over it: cryptography 51 (which breaks Airflow 2.11 to 3.1, not 3.2 and 3.3), a
botocore without AWS Batch's quota-share calls.

A package is laid over the installation by putting a folder holding it first on
``PYTHONPATH``: it is what ``import`` and ``importlib.metadata`` find first, as if
installed, and the installation itself is left as it was.

Time: about 1 min on 2 cores (``tests/DURATIONS.md``): every test runs doctor as a process
that imports Airflow (a few seconds each), the first that asks an api-server starts the
session's (about 20 s), and laying cryptography 51 over the installation installs it once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from airflow_quota_provider.airflow_pools.access import INSTALLATION_ADVICE
from airflow_quota_provider.airflow_pools.rest import ROLE_ADVICE
from airflow_quota_provider.demo.ports import free_port
from airflow_quota_provider.demo.processes import Processes
from airflow_quota_provider.demo.stack import Stack, StackSettings
from airflow_quota_provider.installation import line_of
from airflow_quota_provider.versions import airflow_version

ROOT = Path(__file__).resolve().parents[1]
COMMAND = Path(sys.executable).with_name("airflow-quota")
BROKEN_BY_CRYPTOGRAPHY_51 = ("2.11", "3.0", "3.1")


def airflow_line() -> str:
    from airflow import __version__

    return line_of(__version__)


Doctor = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def doctor(tmp_path: Path) -> Doctor:
    """Runs ``airflow-quota doctor ARGS`` from a folder outside the checkout, in a fresh
    Airflow home, with ``overlay`` (a folder of packages) first on the path."""

    def run(
        *args: str, overlay: Path | None = None, fernet_key: str = "", password: str = ""
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
        env.pop("PYTHONPATH", None)
        env.pop("AIRFLOW_QUOTA_API_PASSWORD", None)
        if password:
            env["AIRFLOW_QUOTA_API_PASSWORD"] = password
        env["AIRFLOW_HOME"] = str(tmp_path / "airflow")
        if fernet_key:
            env["AIRFLOW__CORE__FERNET_KEY"] = fernet_key
        if overlay is not None:
            env["PYTHONPATH"] = str(overlay)
        return subprocess.run(
            [str(COMMAND), "doctor", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )

    return run


def overlay(folder: Path, requirement: str) -> Path:
    """``requirement`` alone (no dependencies) installed into ``folder``; skips the test
    when neither uv nor pip can fetch it (a machine that cannot reach PyPI)."""
    uv = shutil.which("uv") or str(ROOT / ".venv" / "bin" / "uv")
    command = [uv, "pip", "install", "--quiet", "--no-deps", "--python", sys.executable]
    if not Path(uv).exists():
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    done = subprocess.run(
        [*command, "--target", str(folder), requirement], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot install {requirement} to lay it over this installation: {done.stderr}")
    return folder


@pytest.fixture(scope="module")
def cryptography_51(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return overlay(tmp_path_factory.mktemp("cryptography-51"), "cryptography==51.0.1")


def test_the_installation_the_tests_run_in_is_fine(doctor: Doctor) -> None:
    done = doctor(fernet_key=Fernet.generate_key().decode())
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ok    Airflow "), lines
    assert "supported (" in lines[0]
    assert any(line.endswith("encrypts and decrypts with its fernet key") for line in lines)
    assert any("has AWS Batch's quota-share calls" in line for line in lines)
    assert lines[-1] == "everything is fine"


def test_cryptography_51_is_found_where_it_breaks_airflow_and_told_what_to_pin(
    doctor: Doctor, cryptography_51: Path
) -> None:
    """On Airflow 2.11 to 3.1 Airflow's own fernet really fails beside cryptography 51 (the
    bound is right: the same check passes beside the installation's own cryptography,
    which the plain install pins below 51); on 3.2 and 3.3 it works."""
    done = doctor(overlay=cryptography_51, fernet_key=Fernet.generate_key().decode())
    lines = done.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL")]
    if airflow_line() not in BROKEN_BY_CRYPTOGRAPHY_51:
        assert (done.returncode, failed) == (0, []), done.stdout + done.stderr
        return
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(failed) == 2, lines
    assert failed[0].startswith("FAIL  cryptography 51.0.1 breaks Airflow ")
    assert failed[0].endswith('; fix: pip install "cryptography<51"')
    assert "cannot encrypt or decrypt connections and Variables (AttributeError: " in failed[1]
    assert "has no attribute 'is_encrypted'" in failed[1]
    assert '"cryptography<51"' in failed[1]
    assert lines[-1] == f"2 of {len(lines) - 1} checks failed"


def test_a_botocore_without_quota_shares_is_found(
    doctor: Doctor, tmp_path_factory: pytest.TempPathFactory
) -> None:
    old = overlay(tmp_path_factory.mktemp("botocore-old"), "botocore==1.40.0")
    done = doctor(overlay=old)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert failed == [
        "FAIL  botocore 1.40.0 is not what the provider needs (>=1.42.72); "
        'fix: pip install "botocore>=1.42.72"',
        "FAIL  botocore 1.40.0 has no AWS Batch quota-share calls (CreateQuotaShare, "
        'ListQuotaShares, UpdateQuotaShare); fix: pip install "boto3>=1.42.72" '
        '"botocore>=1.42.72" (Airflow\'s constraint files pin an older one: lift those pins, '
        "as the README's install section shows)",
    ]


def test_a_config_that_is_not_valid_is_reported_with_every_problem(
    doctor: Doctor, tmp_path: Path
) -> None:
    config = tmp_path / "quota.yaml"
    config.write_text("job_queue: gpus\ncapacity: {gpu: -1}\n")
    done = doctor("--config", str(config))
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert failed, done.stdout
    assert all(line.startswith(f"FAIL  {config}: ") for line in failed)
    assert all(
        line.endswith(f"fix: airflow-quota validate {config} says the same") for line in failed
    )


def test_a_pools_config_without_a_user_says_how_to_name_one(doctor: Doctor, tmp_path: Path) -> None:
    config = tmp_path / "quota.yaml"
    config.write_text(
        "backend: airflow_pools\njob_queue: gpus\ncapacity: {gpu: 4}\n"
        "shares:\n  - {name: nlp, capacity: {gpu: 4}}\n"
    )
    done = doctor("--config", str(config), "--api-url", "http://127.0.0.1:9", "--username", "u")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[-3:-1] == [
        f"ok    {config}: a valid airflow_pools config",
        "FAIL  the pool manager's Airflow user: $AIRFLOW_QUOTA_API_PASSWORD is not set: "
        "--username u logs in with the password it holds (never given on the command line, "
        "where ps shows it)",
    ], done.stdout


# -- a pools fleet's api-server ----------------------------------------------------------------

POOLS_CONFIG = ROOT / "tests" / "pool_manager" / "fleet.yaml"
ACCESS = [
    "may read pools",
    "may write pools",
    "may clear task instances",
    "may write Variables",
]
needs_an_api_server = pytest.mark.skipif(
    airflow_line().startswith("2."), reason="Airflow 2 has no api-server for the pool manager"
)


def ask(doctor: Doctor, stack: Stack, user: str, password: str) -> list[str]:
    """What doctor says of the api-server, the lines of the installation's checks left out."""
    done = doctor(
        *("--config", str(POOLS_CONFIG), "--api-url", stack.api_url, "--username", user),
        password=password,
    )
    lines = done.stdout.splitlines()
    config = lines.index(f"ok    {POOLS_CONFIG}: a valid airflow_pools config")
    assert done.returncode == (0 if lines[-1] == "everything is fine" else 1), done.stdout
    return lines[config + 1 :]


@pytest.mark.slow
@needs_an_api_server
def test_the_managers_user_may_do_all_it_must(doctor: Doctor, api_server: Stack) -> None:
    said = ask(doctor, api_server, "admin", api_server.settings.password)
    assert said == [
        f"ok    api-server {api_server.api_url} answers (Airflow {airflow_version()})",
        "ok    admin logs in",
        *(f"ok    admin {what}" for what in ACCESS),
        "everything is fine",
    ]
    variables = api_server.api.get("/api/v2/variables?limit=100")["variables"]
    assert [v["key"] for v in variables if "doctor" in v["key"]] == [], "the probe is deleted"


@pytest.mark.slow
@needs_an_api_server
def test_a_viewer_is_told_which_role_it_lacks(doctor: Doctor, api_server: Stack) -> None:
    passwords = json.loads((api_server.home / "passwords.json").read_text())
    said = ask(doctor, api_server, "viewer", passwords["viewer"])
    assert said[:3] == [
        f"ok    api-server {api_server.api_url} answers (Airflow {airflow_version()})",
        "ok    viewer logs in",
        "ok    viewer may read pools",
    ]
    refused = said[3:-1]
    assert [line.split(":")[0] for line in refused] == [f"FAIL  viewer {w}" for w in ACCESS[1:]]
    for line in refused:
        assert ": refused (" in line and "answered 403 Forbidden" in line, line
        assert line.endswith(f"; fix: give the user the role: {ROLE_ADVICE}"), line
    assert said[-1].startswith("3 of ") and said[-1].endswith(" checks failed")


@pytest.mark.slow
@needs_an_api_server
def test_a_wrong_password_and_an_api_server_away_are_told_apart(
    doctor: Doctor, api_server: Stack
) -> None:
    said = ask(doctor, api_server, "admin", "not-the-password")
    assert said[0] == f"ok    api-server {api_server.api_url} answers"
    assert said[1].startswith("FAIL  admin logs in: the login is refused (log in: answered 401")
    assert said[1].endswith(
        "; fix: check the user and its password (the connection's, or $AIRFLOW_QUOTA_API_PASSWORD)"
    )
    away = f"http://127.0.0.1:{free_port()}"
    done = doctor(
        *("--config", str(POOLS_CONFIG), "--api-url", away, "--username", "admin"),
        password="x",
    )
    last = done.stdout.splitlines()[-2]
    assert last.startswith(
        f"FAIL  api-server {away}: log in: Airflow's API at {away} is unreachable"
    )
    assert last.endswith("; fix: start the api-server or correct its URL")


@pytest.mark.slow
@needs_an_api_server
def test_an_api_server_beside_cryptography_51_is_found_by_the_stack_and_by_doctor(
    doctor: Doctor, cryptography_51: Path, tmp_path: Path
) -> None:
    """The plain install of Airflow 2.11 to 3.1 without its pin: the api-server answers 500
    to every encrypted write; the test stack's start says so, and doctor points at the
    api-server's installation. On 3.2 and 3.3 the same api-server works."""
    (tmp_path / "dags").mkdir()
    settings = StackSettings(
        workdir=tmp_path,
        dags_folder=tmp_path / "dags",
        quota_config=POOLS_CONFIG,
        extra_env={"PYTHONPATH": str(cryptography_51)},
    )
    with Processes(tmp_path / "logs") as processes:
        stack = Stack(settings, processes)
        if airflow_line() not in BROKEN_BY_CRYPTOGRAPHY_51:
            stack.start_api_server()
            said = ask(doctor, stack, "admin", settings.password)
            assert said[-1] == "everything is fine", said
            return
        with pytest.raises(RuntimeError) as refused:
            stack.start_api_server()
        assert "Airflow cannot store a connection's password or a Variable (POST " in str(
            refused.value
        )
        assert str(refused.value).endswith(
            ": `airflow-quota doctor` tells what in this installation breaks it"
        )
        said = ask(doctor, stack, "admin", settings.password)
    assert said[-3].startswith("ok    admin may clear task instances"), said
    assert said[-2].startswith("FAIL  admin may write Variables: Airflow failed (set Variable ")
    assert "answered 500 Internal Server Error" in said[-2]
    assert said[-2].endswith(f"; fix: {INSTALLATION_ADVICE}")
