"""The Helios Earth trace (16 teams, 856 GPUs, 27,717 jobs, May 2020) under each quota policy.

Run: ``.venv/bin/python benchmarks/trace_replay.py [--repeat N] [--months N,N] [--speed-only]``

Every team is a LEND_AND_BORROW share owning its recorded quota, with no
borrow limit. At loads 1.0, 1.2 and 1.4, each policy (aws, static, pooled)
and each extension of aws replays the month with a 60 s preemption delay and
a 1800 s checkpoint interval (and aws once more without the delay, to see what
guarantee violation is left without it), in process; the figures are the
metrics of ``simulate --json`` ("of demand" is ``demand_utilization``; waits
are total waits, before the first start and after every preemption, and
"first wait" the wait before the first start only). Then:

- the consistency check: ``static`` at load 1.0 against the trace README
  (1,162,695 pending GPU-minutes, 21.7 minutes mean wait);
- speed: the whole ``airflow-quota simulate`` command (a subprocess: read,
  replay, print) with aws at load 1.0 and 1.4, median of the repeats; then the
  month repeated 1, 2, 5 and 10 times back to back, to show how wall time
  grows with jobs (the 10-month run is the 120 s bound).

Exits 1 if a bound of ``bounds.yaml`` is missed.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from bounds import bound

from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.core.model import IdleAssignment, QueueConfig, VictimOrder
from airflow_quota_provider.simulation.policies import Extensions, Policy
from airflow_quota_provider.simulation.replay import ReplaySettings, replay
from airflow_quota_provider.simulation.traces import Trace, TraceFormat, read_trace

TRACE_DIR = Path(__file__).resolve().parents[2] / "shared" / "traces" / "helios-earth"
LOADS = (1.0, 1.2, 1.4)
CHECKPOINT = 1800.0
DELAY = 60.0
MONTH_MINUTES = 44_640
README_PENDING_GPU_MINUTES = 1_162_695
README_MEAN_WAIT_MINUTES = 21.7
EXTENSIONS = {
    "fair": Extensions(idle_assignment=IdleAssignment.FAIR),
    "min_runtime 1800": Extensions(min_runtime_seconds=1800.0),
    "least_work_lost": Extensions(victim_order=VictimOrder.LEAST_WORK_LOST),
}


def helios_config(folder: Path) -> dict[str, Any]:
    with open(folder / "quotas.csv", newline="") as file:
        quotas = {row["team"]: int(row["gpus"]) for row in csv.DictReader(file)}
    return {
        "job_queue": "helios-earth",
        "capacity": {"gpu": sum(quotas.values())},
        "shares": [
            {"name": team, "capacity": {"gpu": gpus}, "sharing": "LEND_AND_BORROW",
             "borrow_limit": -1}
            for team, gpus in quotas.items()
        ],
    }  # fmt: skip


def repeated_trace(folder: Path, months: int, path: Path) -> None:
    """The month ``months`` times back to back, in the Helios format."""
    with open(folder / "jobs.csv", newline="") as file:
        rows = list(csv.reader(file))
    with open(path, "w", newline="") as file:
        out = csv.writer(file)
        out.writerow(rows[0])
        for month in range(months):
            for row in rows[1:]:
                out.writerow([int(row[0]) + month * MONTH_MINUTES, *row[1:]])


def _sum(values: dict[str, float]) -> float:
    return float(sum(values.values()))


def row(name: str, load: float, m: dict[str, Any]) -> str:
    wait, first = m["total_wait_seconds"], m["first_start_wait_seconds"]
    return (
        f"| {name} | {load:g} | {m['utilization']['gpu']:.3f} | "
        f"{m['demand_utilization']['gpu']:.4f} | {wait['mean'] / 60:,.1f} | "
        f"{wait['p95'] / 60:,.0f} | {wait['p99'] / 60:,.0f} | {first['mean'] / 60:,.1f} | "
        f"{_sum(m['pending_unit_seconds']) / 60:,.0f} | "
        f"{_sum(m['guarantee_violation_unit_seconds']) / 60:,.0f} | {m['preemptions']:,} | "
        f"{m['lost_work_unit_seconds'] / 60:,.0f} | {m['wall_seconds']:.1f} |"
    )


HEADER = (
    "| policy | load | utilization | of demand | mean wait min | p95 min | p99 min | "
    "mean first wait min | pending GPU-min | violation GPU-min | preemptions | lost GPU-min | "
    "replay s |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def quality(config: QueueConfig, trace: Trace) -> dict[tuple[str, float], dict[str, Any]]:
    results: dict[tuple[str, float], dict[str, Any]] = {}
    print(HEADER)
    for load in LOADS:
        runs = [(p.value, ReplaySettings(p, load, CHECKPOINT, DELAY)) for p in Policy]
        runs.append(("aws, delay 0", ReplaySettings(Policy.AWS, load, CHECKPOINT, 0.0)))
        runs += [
            (f"aws + {name}", ReplaySettings(Policy.AWS, load, CHECKPOINT, DELAY, extensions))
            for name, extensions in EXTENSIONS.items()
        ]
        for name, settings in runs:
            metrics = replay(config, trace, settings).metrics()
            results[(name, load)] = metrics
            print(row(name, load, metrics), flush=True)
    return results


def consistency(static: dict[str, Any]) -> bool:
    pending = _sum(static["pending_unit_seconds"]) / 60
    # the README's waits are before the first start (nothing is preempted under static)
    wait = static["first_start_wait_seconds"]["mean"] / 60
    gaps = (
        pending / README_PENDING_GPU_MINUTES - 1,
        wait / README_MEAN_WAIT_MINUTES - 1,
    )
    tolerance = bound("trace_replay_consistency_fraction")
    ok = all(abs(gap) <= tolerance for gap in gaps)
    print(
        f"\nconsistency, static at load 1.0: pending {pending:,.0f} GPU-min vs "
        f"{README_PENDING_GPU_MINUTES:,} ({gaps[0]:+.2%}), mean first wait {wait:.2f} min vs "
        f"{README_MEAN_WAIT_MINUTES} ({gaps[1]:+.2%}); {'within' if ok else 'OUTSIDE'} "
        f"{tolerance:.0%}"
    )
    return ok


def command_seconds(config: Path, trace: Path, load: float, repeat: int) -> list[float]:
    command = [
        str(Path(sys.executable).with_name("airflow-quota")), "simulate",
        "--config", str(config), "--trace", str(trace), "--trace-format", "helios",
        "--load", f"{load:g}", "--checkpoint-interval", f"{CHECKPOINT:g}",
        "--preemption-delay", f"{DELAY:g}",
    ]  # fmt: skip
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
    return walls


def speed(config: Path, folder: Path, repeat: int, months: list[int]) -> bool:
    ok = True
    print("\n| run | jobs | wall s (median) | runs | bound s |\n|---|---:|---:|---|---:|")
    for load, name in ((1.0, "trace_replay_month_load_1_0_seconds"),
                       (1.4, "trace_replay_month_load_1_4_seconds")):  # fmt: skip
        walls = command_seconds(config, folder / "jobs.csv", load, repeat)
        wall, limit = statistics.median(walls), bound(name)
        ok &= wall <= limit
        runs = ", ".join(f"{w:.2f}" for w in walls)
        print(f"| aws, one month, load {load:g} | 27,717 | {wall:.2f} | {runs} | {limit:g} |")
    with tempfile.TemporaryDirectory() as scratch:
        for count in months:
            path = Path(scratch) / f"jobs-{count}.csv"
            repeated_trace(folder, count, path)
            wall = statistics.median(command_seconds(config, path, 1.0, 1))
            month_limit = bound("trace_replay_ten_months_seconds") if count == 10 else None
            if month_limit is not None:
                ok &= wall <= month_limit
            print(
                f"| aws, {count} month(s), load 1 | {27_717 * count:,} | {wall:.2f} | 1 | "
                f"{'-' if month_limit is None else f'{month_limit:g}'} |",
                flush=True,
            )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", type=Path, default=TRACE_DIR)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--months", default="1,2,5,10", help="repeated-month runs, e.g. 1,10")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--speed-only", action="store_true", help="only the consistency check and the speed runs"
    )
    args = parser.parse_args()
    data = helios_config(args.trace_dir)
    config = parse_config(data)
    trace = read_trace(args.trace_dir / "jobs.csv", TraceFormat.HELIOS)
    print(f"python {sys.version.split()[0]}, {len(trace.jobs):,} jobs, 16 shares, 856 GPUs\n")
    if args.speed_only:
        static = ReplaySettings(Policy.STATIC, 1.0, CHECKPOINT, DELAY)
        ok = consistency(replay(config, trace, static).metrics())
    else:
        ok = consistency(quality(config, trace)[("static", 1.0)])
    if not args.skip_speed:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "helios.yaml"
            path.write_text(yaml.safe_dump(data))
            months = [int(m) for m in args.months.split(",") if m]
            ok &= speed(path, args.trace_dir, args.repeat, months)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
