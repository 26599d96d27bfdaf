"""Whether uv resolves a line's plain install as a user's ``pip install`` would.

Run: ``.venv/bin/python -m compat.resolution LINE`` (e.g. ``3.2``).

``compat/lines.py`` installs each line's ``plain`` virtualenv with ``uv pip install``,
standing for what a user's plain ``pip install`` resolves. This builds the provider's
wheel as ``compat/lines.py`` does and resolves the same requirements
(``Line.requirements("plain", wheel)``) twice for the Python running it (3.11), installing
nothing into any existing environment:

- pip: ``pip install --dry-run --ignore-installed --quiet --report FILE`` with the newest
  pip in a throwaway virtualenv; its report lists every package pip would install. pip
  runs without this machine's pip configuration (``PIP_CONFIG_FILE`` set to
  ``os.devnull``, the other ``PIP_*`` settings dropped but the certificate and the
  timeout): it adds ``find-links``, two local indexes and a constraints file that a
  user's pip does not have, so pip reads PyPI only, as uv does;
- uv: ``uv pip compile`` of the same requirements for that virtualenv's interpreter.

It prints the packages whose versions differ (name, pip's, uv's), those only one of
them takes, and a verdict with counts; exit 0 when they agree, 1 when they differ. Both
answers are kept in ``.venv-compat/resolution-LINE/`` (``pip-report.json``,
``uv.txt``). Names are compared normalized (PEP 503), versions as versions (PEP 440).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from airflow_quota_provider.view.text import table
from compat.lines import LINES, VENVS, Line, uv

Resolution = Mapping[str, str]
"""Package name -> the version a resolver took (:func:`compare` normalizes names, PEP 503)."""
PIP_SETTINGS_KEPT = ("PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK")
"""What of this machine's pip settings applies to the pip run: none changes what it takes."""


@dataclass(frozen=True)
class Difference:
    """One package the two resolutions do not take alike (``None``: not taken at all)."""

    name: str
    pip: str | None
    uv: str | None


@dataclass(frozen=True)
class Comparison:
    """Two resolutions side by side."""

    same: tuple[str, ...]
    """Packages both take at the same version."""
    versions: tuple[Difference, ...]
    """Packages both take, at different versions."""
    only_pip: tuple[Difference, ...]
    only_uv: tuple[Difference, ...]

    @property
    def agree(self) -> bool:
        return not (self.versions or self.only_pip or self.only_uv)

    @property
    def differences(self) -> tuple[Difference, ...]:
        return self.versions + self.only_pip + self.only_uv

    def verdict(self) -> str:
        total = len(self.same) + len(self.differences)
        if self.agree:
            return f"pip and uv agree: the same {total} packages at the same versions"
        return (
            f"pip and uv differ on {len(self.differences)} of {total} packages: "
            f"{len(self.versions)} at other versions, {len(self.only_pip)} only pip takes, "
            f"{len(self.only_uv)} only uv takes"
        )

    def table(self) -> list[str]:
        """The differences as a table, one row a package (no rows when they agree)."""
        rows = [(d.name, d.pip or "-", d.uv or "-") for d in self.differences]
        return table(("PACKAGE", "PIP", "UV"), rows) if rows else []


def compare(pip: Resolution, uv: Resolution) -> Comparison:
    """What ``pip`` and ``uv`` take alike and what not, each group sorted by name."""
    pip, uv = _normalized(pip), _normalized(uv)
    both = sorted(pip.keys() & uv.keys())
    return Comparison(
        same=tuple(name for name in both if _same_version(pip[name], uv[name])),
        versions=tuple(
            Difference(name, pip[name], uv[name])
            for name in both
            if not _same_version(pip[name], uv[name])
        ),
        only_pip=tuple(Difference(name, pip[name], None) for name in sorted(pip.keys() - uv)),
        only_uv=tuple(Difference(name, None, uv[name]) for name in sorted(uv.keys() - pip)),
    )


def from_pip_report(report: Mapping[str, Any]) -> dict[str, str]:
    """What pip's ``--report`` JSON says it would install."""
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in report["install"]
    }


def from_requirements(text: str) -> dict[str, str]:
    """What ``uv pip compile`` wrote: ``name==version`` lines, and ``name @ URL`` lines for
    wheels given by URL (their version is in the wheel's file name)."""
    taken: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if requirement.url:
            if not requirement.url.endswith(".whl"):
                raise ValueError(f"{line!r}: no version to read from a URL that is not a wheel")
            taken[name] = str(parse_wheel_filename(requirement.url.rsplit("/", 1)[-1])[1])
            continue
        pinned = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if len(pinned) != 1:
            raise ValueError(f"{line!r} pins no single version")
        taken[name] = pinned[0]
    return taken


def _normalized(resolution: Resolution) -> dict[str, str]:
    normalized: dict[str, str] = {}
    named: dict[str, str] = {}
    for name, version in resolution.items():
        key = canonicalize_name(name)
        if key in named:
            raise ValueError(f"{named[key]} and {name} are one package ({key}), taken twice")
        normalized[key], named[key] = version, name
    return normalized


def _same_version(one: str, other: str) -> bool:
    try:
        return Version(one) == Version(other)
    except InvalidVersion:
        return one == other


@dataclass(frozen=True)
class Timed:
    """One resolver's answer and how long it took."""

    resolver: str
    taken: dict[str, str]
    seconds: float


def pip_environment() -> dict[str, str]:
    """This process's environment without the pip settings that change what pip takes."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    kept.update({k: os.environ[k] for k in PIP_SETTINGS_KEPT if k in os.environ})
    return {**kept, "PIP_CONFIG_FILE": os.devnull}


def resolve_with_pip(python: Path, requirements: Sequence[str], out: Path) -> Timed:
    """pip's dry run of ``requirements`` with ``python``'s pip; its report goes to ``out``."""
    report = out / "pip-report.json"
    command = [str(python), "-m", "pip", "install", "--dry-run", "--ignore-installed"]
    command += ["--quiet", "--report", str(report), *requirements]
    started = time.monotonic()
    subprocess.run(command, check=True, env=pip_environment(), cwd=out)
    took = time.monotonic() - started
    data = json.loads(report.read_text())
    return Timed(f"pip {data['pip_version']}", from_pip_report(data), took)


def resolve_with_uv(python: Path, requirements: Sequence[str], out: Path) -> Timed:
    """``uv pip compile`` of ``requirements`` for ``python``; its answer goes to ``out``."""
    wanted, answer = out / "requirements.in", out / "uv.txt"
    wanted.write_text("\n".join(requirements) + "\n")
    command = [uv(), "pip", "compile", "--quiet", "--python", str(python), "--no-header"]
    command += ["--no-annotate", "--output-file", str(answer), str(wanted)]
    started = time.monotonic()
    subprocess.run(command, check=True, cwd=out)
    took = time.monotonic() - started
    version = subprocess.run([uv(), "--version"], capture_output=True, text=True, check=True)
    return Timed(f"uv {version.stdout.split()[1]}", from_requirements(answer.read_text()), took)


def resolve(line: Line, wheel: Path) -> tuple[Timed, Timed]:
    """pip's and uv's resolutions of ``line``'s plain install, in a throwaway virtualenv."""
    out = VENVS / f"resolution-{line.name}"
    out.mkdir(parents=True, exist_ok=True)
    requirements = line.requirements("plain", wheel)
    with tempfile.TemporaryDirectory(prefix="quota-resolution-") as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
        python = venv / "bin" / "python"
        # the newest pip, as a user who keeps pip current has
        subprocess.run(
            [uv(), "pip", "install", "--quiet", "--python", str(python), "pip"], check=True
        )
        pip = resolve_with_pip(python, requirements, out)
        return pip, resolve_with_uv(python, requirements, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    known = {line.name: line for line in LINES}
    parser.add_argument("line", choices=known, help="the Airflow line, e.g. 3.2")
    line = known[parser.parse_args(argv).line]
    from compat.package import build

    wheel = build(VENVS / "dist").wheel
    pip, uv_ = resolve(line, wheel)
    where = f"Airflow {line.airflow} plain, Python {platform.python_version()}"
    print(f"resolution: {where}: {' '.join(line.requirements('plain', wheel))}")
    for timed in (pip, uv_):
        print(f"resolution: {timed.resolver}: {len(timed.taken)} packages in {timed.seconds:.0f} s")
    comparison = compare(pip.taken, uv_.taken)
    print("\n".join([*comparison.table(), f"resolution: {where}: {comparison.verdict()}"]))
    return 0 if comparison.agree else 1


if __name__ == "__main__":
    sys.exit(main())
