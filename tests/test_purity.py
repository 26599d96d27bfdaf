"""The scheduling core, the pools backend's decision step and the pools planner import no
I/O library."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "airflow_quota_provider"
PURE = sorted(
    [
        *(PACKAGE / "core").glob("*.py"),
        *(
            PACKAGE / "airflow_pools" / name
            for name in (
                "tasks.py",
                "fleet.py",
                "decide.py",
                "pools.py",
                "standing.py",
                "overtaking.py",
                "cycle_history.py",
                "unanswered.py",
            )
        ),
        PACKAGE / "sync" / "changes.py",
        PACKAGE / "sync" / "pool_plan.py",
    ]
)
FORBIDDEN = ("airflow", "boto3", "botocore", "sqlalchemy", "http", "urllib", "requests", "httpx")


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", PURE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_imports_no_io_library(path: Path) -> None:
    bad = sorted(
        name
        for name in imported(path)
        if name.split(".")[0] in FORBIDDEN and not name.startswith("airflow_quota_provider")
    )
    assert not bad, f"{path.name} imports {bad}"


def test_the_pure_modules_are_found() -> None:
    assert len(PURE) > 15
