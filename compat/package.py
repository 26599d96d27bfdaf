"""The provider as published: an sdist, and the wheel built from that sdist.

``python -m build`` builds the sdist from the checkout and then the wheel from the
unpacked sdist, so a file the sdist lacks is missing from the wheel too and the
tests that install the wheel find it. ``twine check --strict`` reads both as PyPI
would. ``compat/lines.py`` installs the wheel into every Airflow line's virtualenv;
``tests/test_package.py`` installs it into a clean one beside Airflow.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Package:
    sdist: Path
    wheel: Path


def build(out: Path) -> Package:
    """Build the sdist and, from it, the wheel into ``out`` (emptied first)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise RuntimeError(f"python -m build made {sdists + wheels} in {out}, not one of each")
    return Package(sdists[0], wheels[0])


def check(package: Package) -> None:
    """``twine check --strict`` on both files: what PyPI would refuse raises."""
    twine = [sys.executable, "-m", "twine", "check", "--strict"]
    subprocess.run([*twine, str(package.sdist), str(package.wheel)], check=True)
