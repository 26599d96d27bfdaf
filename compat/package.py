"""The provider as published: an sdist, and the wheel built from that sdist.

The build runs on a copy of the files git would commit (tracked, and untracked
ones ``.gitignore`` does not exclude), never in the checkout: the checkout's
``build/``, ``*.egg-info/`` and ``__pycache__/`` cannot slip into the package, a
build writes nothing into a tree others work in, and two builds at the same time
do not share one ``egg-info``. ``python -m build`` makes the sdist and then the
wheel from the unpacked sdist, so a file the sdist lacks is missing from the wheel
too, and the tests that install the wheel find it. ``twine check --strict`` reads
both as PyPI would. ``compat/lines.py`` installs the wheel into every Airflow
line's virtualenv; ``tests/test_package.py`` installs it into a clean one beside
Airflow.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "airflow_quota_provider"
"""The distribution's name as it starts its files' names (PEP 625, PEP 427)."""


@dataclass(frozen=True)
class Package:
    """The two files ``python -m build`` made."""

    sdist: Path
    wheel: Path


def build(out: Path) -> Package:
    """Build the sdist and, from it, the wheel into ``out``.

    Earlier sdists and wheels of this provider in ``out`` are removed first; nothing
    else there is touched.
    """
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob(f"{NAME}-*.tar.gz"), *out.glob(f"{NAME}-*.whl")]:
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="quota-build-") as scratch:
        source = Path(scratch) / "source"
        copy_sources(source)
        command = [sys.executable, "-m", "build", "--outdir", str(out.resolve()), str(source)]
        _run("python -m build", command, cwd=Path(scratch))
    sdists = sorted(out.glob(f"{NAME}-*.tar.gz"))
    wheels = sorted(out.glob(f"{NAME}-*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise RuntimeError(f"python -m build made {sdists + wheels} in {out}, not one of each")
    return Package(sdists[0], wheels[0])


def check(package: Package) -> None:
    """``twine check --strict`` on both files: what PyPI would refuse raises."""
    twine = [sys.executable, "-m", "twine", "check", "--strict"]
    _run("twine check --strict", [*twine, str(package.sdist), str(package.wheel)], cwd=ROOT)


def source_files() -> list[Path]:
    """The files git would commit, relative to the checkout (deleted ones left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        problem = listed.stderr.decode(errors="replace")
        raise RuntimeError(
            f"the build copies what git lists, and git ls-files in {ROOT} failed:\n{problem}"
        )
    names = sorted({name for name in listed.stdout.decode().split("\0") if name})
    return [Path(name) for name in names if (ROOT / name).is_file()]


def copy_sources(target: Path) -> None:
    """Copy :func:`source_files` into ``target``, keeping their paths."""
    for name in source_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)


def _run(what: str, command: list[str], cwd: Path) -> None:
    """Run ``command``; if it fails, raise with the end of what it printed."""
    done = subprocess.run(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{done.stdout[-4000:]}")
