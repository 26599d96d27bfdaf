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
