"""Where the checks' time goes: per test module, from pytest's JUnit XML report.

Run: ``PYTEST_ADDOPTS="--junitxml=/tmp/junit.xml" make test``, then
``.venv/bin/python benchmarks/checks_profile.py /tmp/junit.xml [--top N]``.

Each test's time in the report is its setup, call and teardown together, so a module's
fixture that starts a stack counts in its first test. Prints one row per module (the
slowest first): tests, seconds in all, the slowest test and its seconds, and whether the
module is marked ``slow``; then the total, and the sum of the two slowest modules, which
bounds how short two test processes can make the run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Module:
    name: str
    seconds: float = 0.0
    tests: int = 0
    slowest: tuple[float, str] = (0.0, "")
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def read(report: Path) -> list[Module]:
    """The report's modules, the slowest first."""
    modules: dict[str, Module] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        dotted = case.get("classname", "")
        name = dotted.replace(".", "/") + ".py"
        module = modules.setdefault(name, Module(name))
        seconds = float(case.get("time", "0"))
        module.seconds += seconds
        module.tests += 1
        module.slowest = max(module.slowest, (seconds, case.get("name", "")))
        outcome = next((child.tag for child in case), "passed")
        module.outcomes[outcome] += 1
    return sorted(modules.values(), key=lambda m: -m.seconds)


def slow_modules() -> set[str]:
    """The modules holding tests marked ``slow``, as pytest collects them."""
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-m", "slow"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return {line.split("::")[0] for line in listed.splitlines() if "::" in line}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="pytest's --junitxml file")
    parser.add_argument("--top", type=int, default=30, help="rows to print (default 30)")
    args = parser.parse_args(argv)
    modules = read(args.report)
    slow = slow_modules()
    print("| module | tests | s | slowest test | s | slow |\n|---|---:|---:|---|---:|---|")
    for module in modules[: args.top]:
        seconds, test = module.slowest
        print(
            f"| {module.name} | {module.tests} | {module.seconds:.0f} | {test[:60]} | "
            f"{seconds:.0f} | {'yes' if module.name in slow else ''} |"
        )
    total = sum(m.seconds for m in modules)
    slow_total = sum(m.seconds for m in modules if m.name in slow)
    tests = sum(m.tests for m in modules)
    print(
        f"\n{tests} tests in {len(modules)} modules: {total:.0f} s of test time, "
        f"{slow_total:.0f} s of it in modules marked slow; the two slowest modules "
        f"{sum(m.seconds for m in modules[:2]):.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
