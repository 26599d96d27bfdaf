"""The provider on every Airflow release line it supports, installed as users install it.

Run: ``.venv/bin/python -m compat.lines test [LINE ...] [--how plain|pinned]`` (all lines
but the current one, whose tests ``make test`` runs in ``.venv``), or
``.venv/bin/python -m compat.lines lock [LINE ...]`` to rebuild the pins.

The provider is built once (sdist, then the wheel from it: ``compat/package.py``) and
the wheel, not the source tree, is installed into a virtualenv per line and way:

- ``plain`` (``.venv-compat/LINE-plain``): ``pip install "apache-airflow==X"
  airflow-quota-provider[postgres]`` with nothing else pinned, as a user adds the
  provider to a deployment: the resolver takes the newest amazon provider,
  ``common-compat``, boto3 and everything else Airflow allows. A line whose Airflow
  does not work that way pins only what breaks it (``Line.plain_pins``, from the
  provider's ``installation.KNOWN_BREAKAGES``, as the README's install section does).
  uv stands for pip here: ``python -m compat.resolution LINE`` resolves the same list
  (``Line.requirements``) with both, installing nothing; on 2026-12-07 they took the same
  packages at the same versions on every line (``benchmarks/RESULTS.md``);
- ``pinned`` (``.venv-compat/LINE-pinned``): like Airflow's own constraint files, every
  package as PyPI had it a week after the line's last patch release
  (``compat/constraints-LINE.txt``, resolved by ``uv pip compile --exclude-newer``),
  except the amazon provider, ``common-compat`` and boto3/botocore, taken at their
  current releases: Airflow's constraints pin a botocore older than AWS Batch's
  quota-share API, so a user must lift those pins (the README's install section).

Both ways must pass. The tests are split between them by what each needs most
(CI's 90 minutes allow no more on 2 cores): the ``plain`` run runs the line's whole
set (``Line.tests``), the ``pinned`` run the example DAGs' AWS Batch story and the
pool manager's story (a reclaim, a clear and a fail with their notes). pytest
runs from the checkout with ``--import-mode=append`` and the venv's own ``pytest``, so
the tests import the installed wheel, never the source tree (``tests/conftest.py``
checks it when ``AIRFLOW_QUOTA_INSTALLED`` is set).

One thread installs the lines' virtualenvs in turn ahead of the tests, so a line's install
overlaps the tests of the lines before it. It prints how long each run took, and exits 1
if any failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from airflow_quota_provider.installation import breakages_of, pins_of

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "compat"
VENVS = ROOT / ".venv-compat"
FLOATING = (
    "apache-airflow-providers-amazon",
    "apache-airflow-providers-common-compat",
    "boto3",
    "botocore",
    "s3transfer",
)
"""Packages taken at their current release on every line (see the module docstring)."""
TOOLS = ("pytest", "pytest-xdist", "httpx", "statsd", "asyncpg")
"""What the tests need besides the provider (its ``postgres`` extra brings psycopg2; Airflow 3
on PostgreSQL needs asyncpg too, for the tests that run it there)."""
BATCH_TESTS = (
    "tests/test_doctor.py",
    "tests/test_installation.py",
    "tests/airflow/test_example_dags.py",
    "tests/airflow/test_operator.py",
    "tests/airflow/test_trigger.py",
    "tests/airflow/test_sensor_dag.py",
)
AIRFLOW_3_TESTS = (
    "tests/sync/test_pool_apply.py",
    "tests/pool_manager/test_end_to_end.py",
    "tests/pool_manager/test_order.py",
    "tests/pool_manager/test_sensor.py",
    "tests/reconciler/test_reconcile.py",
    "tests/view/test_api.py",
    "tests/airflow/test_triggerer_load.py",
    "tests/pool_manager/test_sagemaker_training.py",
)
PINNED_TESTS = (
    "tests/airflow/test_example_dags.py",
    "tests/pool_manager/test_end_to_end.py",
)
"""What the ``pinned`` run of a line runs (of those its line runs)."""
HOWS = ("plain", "pinned")


@dataclass(frozen=True)
class Line:
    name: str
    airflow: str
    """The line's last patch release, the one tested."""
    snapshot: str
    """PyPI as of this day (a week after ``airflow`` was released) pins everything else."""
    deselect: tuple[str, ...] = ()
    """Tests that check what this release's ``dag.test()`` cannot show (see ``why``)."""
    why: str = ""

    @property
    def plain_pins(self) -> tuple[str, ...]:
        """What a plain install must pin for this Airflow to work at all: the provider's
        own table of known breakages (``airflow-quota doctor`` reads it too)."""
        return pins_of(self.name)

    @property
    def plain_why(self) -> str:
        return "; ".join(f"{b.pin}: {b.why}" for b in breakages_of(self.name))

    @property
    def constraints(self) -> Path:
        return FOLDER / f"constraints-{self.name}.txt"

    def venv(self, how: str) -> Path:
        return VENVS / f"{self.name}-{how}"

    def requirements(self, how: str, wheel: Path) -> list[str]:
        """What ``uv pip install`` is given to install this line ``how`` with the provider's
        ``wheel``: Airflow, the provider with its ``postgres`` extra and :data:`TOOLS`, then
        the plain pins or the line's constraints file. ``compat/resolution.py`` resolves the
        same list with pip."""
        provider = f"airflow-quota-provider[postgres] @ {wheel.as_uri()}"
        wanted = [f"apache-airflow=={self.airflow}", provider, *TOOLS]
        if how == "plain":
            return [*wanted, *self.plain_pins]
        return ["-c", str(self.constraints), *wanted]

    def tests(self, how: str) -> tuple[str, ...]:
        every = BATCH_TESTS + (AIRFLOW_3_TESTS if not self.name.startswith("2.") else ())
        return every if how == "plain" else tuple(t for t in every if t in PINNED_TESTS)


LINES = (
    Line("2.11", "2.11.2", "2026-03-21"),
    Line(
        "3.0",
        "3.0.6",
        "2025-09-05",
        deselect=(
            "tests/airflow/test_operator.py::test_invalid_requests_fail_before_anything_is_submitted_without_retries",
            "tests/airflow/test_sensor_dag.py::test_a_capacity_that_could_never_be_met_fails_at_once_without_retries",
            "tests/airflow/test_operator.py::test_a_retried_task_reattaches_to_its_job",
            "tests/pool_manager/test_sensor.py::test_a_sensor_that_could_never_succeed_fails_at_once_with_what_is_wrong",
        ),
        why="Airflow 3.0's dag.test() logs nothing of the exception that fails a task, "
        "which these tests read, and does not retry a deferred task whose wait timed out; "
        "on its real scheduler, refused deferred sensors were not all failed within 180 s "
        "in 2 of 4 runs (cause not yet found)",
    ),
    Line("3.1", "3.1.8", "2026-03-18"),
    Line("3.2", "3.2.2", "2026-06-05"),
)
"""Every supported line but the current one (3.3), which ``make test`` runs in full."""


def uv() -> str:
    found = Path(sys.executable).with_name("uv")
    if not found.exists():
        raise SystemExit(f"uv is missing beside {sys.executable}: run `make .venv/.installed`")
    return str(found)


def lock(line: Line) -> None:
    """Pin the line's packages into its constraints file."""
    wanted = FOLDER / f".requirements-{line.name}.in"
    wanted.write_text(
        "\n".join([f"apache-airflow=={line.airflow}", "-e .[postgres]", *TOOLS]) + "\n"
    )
    floating = [f"--exclude-newer-package={name}={time.strftime('%Y-%m-%d')}" for name in FLOATING]
    try:
        subprocess.run(
            [
                uv(),
                "pip",
                "compile",
                "--quiet",
                "--python-version=3.11",
                f"--exclude-newer={line.snapshot}",
                *floating,
                "--no-emit-package=airflow-quota-provider",
                "--no-header",
                "--no-annotate",
                f"--output-file={line.constraints}",
                str(wanted),
            ],
            cwd=ROOT,
            check=True,
        )
    finally:
        wanted.unlink()
    pins = line.constraints.read_text()
    line.constraints.write_text(
        f"# Airflow {line.airflow} and what PyPI had on {line.snapshot}; current releases of "
        f"{', '.join(FLOATING)}.\n# Made by: .venv/bin/python -m compat.lines lock {line.name}\n"
        + pins
    )


def install(line: Line, how: str, wheel: Path) -> float:
    """``.venv-compat/LINE-HOW`` with Airflow and the provider's wheel, installed ``how``;
    the seconds it took."""
    started = time.monotonic()
    venv = line.venv(how)
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    if not (venv / "bin" / "python").exists():
        subprocess.run([uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    if how == "plain" and line.plain_pins:
        print(f"compat: Airflow {line.airflow} plain: pinning {line.plain_pins}: {line.plain_why}")
    wanted = line.requirements(how, wheel)
    # --reinstall-package: the wheel keeps its version from one change to the next;
    # --upgrade: a virtualenv kept from an earlier run gets what a new install would
    # (the newest releases allowed), not what it already had
    command = [uv(), "pip", "install", "--quiet", "--upgrade"]
    command += ["--reinstall-package", "airflow-quota-provider"]
    subprocess.run([*command, *wanted], check=True, env=env)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import airflow; print(airflow.__version__)"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=VENVS,
    ).stdout.strip()
    if installed != line.airflow:
        raise RuntimeError(f"{venv} has Airflow {installed}, not {line.airflow}")
    return time.monotonic() - started


def test(line: Line, how: str, installing: Future[float], jobs: int) -> bool:
    """Run the tests of the line installed ``how`` (once ``installing`` is done); whether
    they passed."""
    started = time.monotonic()
    try:
        installed = installing.result()
    except (subprocess.CalledProcessError, RuntimeError) as error:
        print(f"compat: Airflow {line.airflow} {how} FAILED to install: {error}", flush=True)
        return False
    waited = time.monotonic() - started
    venv = line.venv(how)
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "AIRFLOW_QUOTA_INSTALLED": str(venv)}
    env.pop("AIRFLOW_HOME", None)
    env.pop("PYTHONPATH", None)
    command = [str(venv / "bin" / "pytest"), "-p", "no:cacheprovider", "--import-mode=append"]
    if jobs > 1:
        command += ["-n", str(jobs), "--dist", "loadfile"]
    if line.deselect:
        print(f"compat: Airflow {line.airflow}: leaving out {len(line.deselect)} tests: {line.why}")
    deselected = [f"--deselect={test}" for test in line.deselect]
    result = subprocess.run([*command, *deselected, *line.tests(how)], cwd=ROOT, env=env)
    took = time.monotonic() - started
    verdict = "passed" if result.returncode == 0 else "FAILED"
    print(
        f"compat: Airflow {line.airflow} {how} {verdict} in {took / 60:.1f} min "
        f"(install {installed:.0f} s, {waited:.0f} s of it waited for)",
        flush=True,
    )
    return result.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("test", "lock"))
    parser.add_argument("lines", nargs="*", help="e.g. 3.0 2.11 (default: every line)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest processes per line")
    parser.add_argument(
        "--how", choices=HOWS, action="append", help="plain, pinned (default: both)"
    )
    args = parser.parse_args(argv)
    known = {line.name: line for line in LINES}
    unknown = [name for name in args.lines if name not in known]
    if unknown:
        parser.error(f"unknown line(s) {', '.join(unknown)}; there are {', '.join(known)}")
    chosen = [known[name] for name in args.lines] or list(LINES)
    if args.action == "lock":
        for line in chosen:
            lock(line)
        return 0
    from compat.package import build, check

    package = build(VENVS / "dist")
    check(package)
    runs = [(line, how) for line in chosen for how in args.how or HOWS]
    # one thread installs the lines in turn, ahead of the tests: each line's install
    # (downloads mostly) overlaps the tests of the lines before it
    installer = ThreadPoolExecutor(max_workers=1)
    try:
        installs = [installer.submit(install, line, how, package.wheel) for line, how in runs]
        failed = [
            f"{line.airflow} {how}"
            for (line, how), installing in zip(runs, installs, strict=True)
            if not test(line, how, installing, args.jobs)
        ]
    finally:
        installer.shutdown(cancel_futures=True)  # on Ctrl-C, no more installs
    if failed:
        print(f"compat: failed on Airflow {', '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
