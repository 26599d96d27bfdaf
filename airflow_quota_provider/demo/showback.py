"""The showback report that ends each of the demo's stories: ``airflow-quota usage`` over
the story's window, run as its user would run it, with the command shown."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from airflow_quota_provider.core.times import iso_second
from airflow_quota_provider.demo.stack import Stack


def showback(
    stack: Stack, config: Path, since_millis: int, *options: str
) -> tuple[bool, list[str]]:
    """Whether ``airflow-quota usage --config CONFIG --since ...`` (with ``options``)
    succeeded; the command and what it printed (its error and exit code if it failed)."""
    arguments = ["--config", _short(config), "--since", iso_second(since_millis), *options]
    done = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "usage", *arguments],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    shown = shlex.join(["airflow-quota", "usage", *arguments])
    if done.returncode != 0:
        failed = f"failed with exit code {done.returncode}: {done.stderr.strip()}"
        return False, [f"$ {shown}", failed]
    return True, [f"$ {shown}", *done.stdout.rstrip().splitlines()]


def _short(path: Path) -> str:
    """``path`` relative to the working folder when it lies inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
