"""The committed profile of the checks (``tests/DURATIONS.md``): it names modules that exist
and every long module says why it is long."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import DURATIONS, module_seconds

ROOT = Path(__file__).resolve().parents[1]


def test_the_profile_names_modules_that_exist_the_longest_first() -> None:
    seconds = module_seconds()
    assert len(seconds) >= 20, f"{DURATIONS} lists too few modules"
    assert all((ROOT / module).exists() for module in seconds), "a module moved: profile again"
    assert list(seconds.values()) == sorted(seconds.values(), reverse=True)


def test_a_module_over_a_minute_says_in_its_docstring_why() -> None:
    long = [module for module, s in module_seconds().items() if s > 60]
    silent = [module for module in long if "Time: " not in (ROOT / module).read_text()]
    assert long and silent == []


def test_rows_that_are_not_modules_are_left_out(tmp_path: Path) -> None:
    profile = tmp_path / "profile.md"
    profile.write_text(
        "| module | tests | s |\n|---|---:|---:|\n| tests/a.py | 2 | 30 | x |\n"
        "| story | call s | setup s |\n| `b` | 353 | |\n"
    )
    assert module_seconds(profile) == {"tests/a.py": 30.0}
    assert module_seconds(tmp_path / "missing.md") == {}
