"""Every test leaves the process environment as it found it.

Commands run in-process (``main([...])``) may set variables for the rest of
their process, as a command may (``status`` quiets Airflow's logging); in a
test process that would leak into later tests and the subprocesses they start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from airflow_quota_provider.demo.stack import Stack

FLEET = Path(__file__).resolve().parent / "pool_manager" / "fleet.yaml"
DURATIONS = Path(__file__).resolve().parent / "DURATIONS.md"


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


def module_seconds(profile: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test module (``tests/...py``) as the committed profile measured them
    (``tests/test_durations.py`` keeps the profile naming modules that exist)."""
    seconds = {}
    for row in profile.read_text().splitlines() if profile.exists() else []:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if len(cells) > 2 and cells[0].startswith("tests/") and cells[2].isdigit():
            seconds[cells[0]] = float(cells[2])
    return seconds


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where the provider is installed for a compatibility run (``compat/lines.py`` sets
    ``AIRFLOW_QUOTA_INSTALLED`` to its virtualenv), the tests must import that install,
    not the source tree beside them."""
    venv = os.environ.get("AIRFLOW_QUOTA_INSTALLED")
    if not venv:
        return
    import airflow_quota_provider

    found = os.path.realpath(airflow_quota_provider.__file__)
    if not found.startswith(os.path.realpath(venv) + os.sep):
        raise pytest.UsageError(f"the tests import the provider from {found}, not from {venv}")


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Airflow's database and api-server alone (no task runs), started once per test
    process for every module that needs only its REST API. It knows two users: ``admin``
    and ``viewer`` (who may read but not change pools, tasks or Variables); their passwords
    are in ``home / "passwords.json"``. Tests leave it as they found it."""
    from airflow_quota_provider.demo.processes import Processes
    from airflow_quota_provider.demo.stack import Stack, StackSettings

    workdir = tmp_path_factory.mktemp("api-server")
    (workdir / "dags").mkdir()
    settings = StackSettings(
        workdir=workdir,
        dags_folder=workdir / "dags",
        quota_config=FLEET,
        extra_env={"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer"},
    )
    with Processes(workdir / "logs") as processes:
        stack = Stack(settings, processes)
        stack.start_api_server()
        yield stack
