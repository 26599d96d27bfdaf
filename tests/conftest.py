"""Every test leaves the process environment as it found it.

Commands run in-process (``main([...])``) may set variables for the rest of
their process, as a command may (``status`` quiets Airflow's logging); in a
test process that would leak into later tests and the subprocesses they start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


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
