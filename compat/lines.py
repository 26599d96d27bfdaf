"""The provider on every Airflow release line it supports, each in a virtualenv of its own.

Run: ``.venv/bin/python compat/lines.py test [LINE ...]`` (all lines but the
current one, whose tests ``make test`` runs in ``.venv``), or
``.venv/bin/python compat/lines.py lock [LINE ...]`` to rebuild the pins.

Each line is pinned like Airflow's own constraint files pin a release: every
package as it was on PyPI a week after the line's last patch release
(``compat/constraints-LINE.txt``, resolved by ``uv pip compile
--exclude-newer``), except the packages whose current releases the provider
relies on and which users upgrade apart from Airflow: the amazon provider,
``common-compat`` and boto3/botocore (AWS Batch's quota-share calls are recent).
``test`` makes ``.venv-compat/LINE`` from those pins with ``uv``, installs the
provider into it and runs the line's tests there:

- every line: the example DAGs' AWS Batch story through ``dag.test()``, the
  operator, trigger and sensor tests;
- Airflow 3 lines also: the pool manager's story with real Airflow processes
  (api-server, scheduler, dag-processor, triggerer) and the GPU Quotas API.

It prints how long each line took, and exits 1 if any line failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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
TOOLS = ("pytest", "pytest-xdist", "httpx", "psycopg2-binary", "statsd")
"""What the tests need besides the provider."""
BATCH_TESTS = (
    "tests/airflow/test_example_dags.py",
    "tests/airflow/test_operator.py",
    "tests/airflow/test_trigger.py",
    "tests/airflow/test_sensor_dag.py",
)
AIRFLOW_3_TESTS = (
    "tests/pool_manager/test_end_to_end.py",
    "tests/view/test_api.py",
)


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
    def constraints(self) -> Path:
        return FOLDER / f"constraints-{self.name}.txt"

    @property
    def venv(self) -> Path:
        return VENVS / self.name

    @property
    def tests(self) -> tuple[str, ...]:
        return BATCH_TESTS + (AIRFLOW_3_TESTS if not self.name.startswith("2.") else ())


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
        ),
        why="Airflow 3.0's dag.test() logs nothing of the exception that fails a task, "
        "which these tests read, and does not retry a deferred task whose wait timed out",
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
    wanted.write_text("\n".join([f"apache-airflow=={line.airflow}", "-e .", *TOOLS]) + "\n")
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
        f"{', '.join(FLOATING)}.\n# Made by: .venv/bin/python compat/lines.py lock {line.name}\n"
        + pins
    )


def install(line: Line) -> None:
    """``.venv-compat/LINE`` with the line's pins and the provider (editable)."""
    env = {**os.environ, "VIRTUAL_ENV": str(line.venv)}
    if not (line.venv / "bin" / "python").exists():
        subprocess.run(
            [uv(), "venv", "--quiet", "--python", sys.executable, str(line.venv)], check=True
        )
    subprocess.run(
        [uv(), "pip", "install", "--quiet", "-c", str(line.constraints), "-e", str(ROOT), *TOOLS],
        check=True,
        env=env,
    )
    installed = subprocess.run(
        [str(line.venv / "bin" / "python"), "-c", "import airflow; print(airflow.__version__)"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    if installed != line.airflow:
        raise SystemExit(f"{line.venv} has Airflow {installed}, not {line.airflow}")


def test(line: Line, jobs: int) -> bool:
    """Install the line and run its tests; whether they passed."""
    started = time.monotonic()
    install(line)
    installed = time.monotonic() - started
    env = {**os.environ, "VIRTUAL_ENV": str(line.venv)}
    env.pop("AIRFLOW_HOME", None)
    command = [str(line.venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider"]
    if jobs > 1:
        command += ["-n", str(jobs), "--dist", "loadfile"]
    if line.deselect:
        print(f"compat: Airflow {line.airflow}: leaving out {len(line.deselect)} tests: {line.why}")
    deselected = [f"--deselect={test}" for test in line.deselect]
    result = subprocess.run([*command, *deselected, *line.tests], cwd=ROOT, env=env)
    took = time.monotonic() - started
    verdict = "passed" if result.returncode == 0 else "FAILED"
    print(
        f"compat: Airflow {line.airflow} {verdict} in {took / 60:.1f} min "
        f"(install {installed:.0f} s)",
        flush=True,
    )
    return result.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("test", "lock"))
    parser.add_argument("lines", nargs="*", help="e.g. 3.0 2.11 (default: every line)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest processes per line")
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
    failed = [line.airflow for line in chosen if not test(line, args.jobs)]
    if failed:
        print(f"compat: failed on Airflow {', '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
