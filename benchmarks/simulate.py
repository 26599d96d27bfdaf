"""How long ``airflow-quota simulate`` takes for a 10,000-job scenario.

Run: ``.venv/bin/python benchmarks/simulate.py [--jobs N] [--repeat N]``

The scenario (generated, seeded): 10 shares of mixed strategies over two
instance types, 10,000 jobs arriving at random over about two weeks at a load
that keeps queues long and borrowing common (so reclaims happen), random
priorities, a third of the jobs checkpointing, some with preemption retries,
a 60 s preemption delay and a config change half-way. The whole command runs
as a user would start it (a subprocess: parse, validate, replay, JSON out);
the figure is its wall time, median of the repeats.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bounds import bound

BOUND_SECONDS = bound("simulate_10k_jobs_seconds")
UNITS = {"ml.p4d.24xlarge": 64, "ml.g5.12xlarge": 128}
STRATEGIES = ["LEND_AND_BORROW", "LEND_AND_BORROW", "LEND", "RESERVE", "LEND_AND_BORROW"]


def make_scenario(job_count: int, seed: int = 11) -> dict[str, Any]:
    rng = random.Random(seed)
    shares = []
    for i in range(10):
        strategy = STRATEGIES[i % len(STRATEGIES)]
        share: dict[str, Any] = {
            "name": f"team-{i}",
            "capacity": {unit: total // 10 for unit, total in UNITS.items()},
            "sharing": strategy,
            "in_share_preemption": i % 2 == 0,
        }
        if strategy == "LEND_AND_BORROW":
            share["borrow_limit"] = [-1, 100, 200][i % 3]
        shares.append(share)
    jobs = []
    clock = 0.0
    for i in range(job_count):
        clock += rng.expovariate(1 / 200)
        unit = rng.choice(list(UNITS))
        job: dict[str, Any] = {
            "id": f"j{i}",
            "share": f"team-{rng.randrange(10)}",
            "submit": round(clock),
            "priority": rng.choice([0, 10, 50, 100]),
            "demand": {unit: rng.choice([1, 1, 2, 4, 8, 12])},
            "duration": round(rng.lognormvariate(8.2, 1.0)) + 60,
        }
        if i % 3 == 0:
            job["checkpoint_interval"] = 900
        if i % 7 == 0:
            job["preemption_retries"] = 2
        jobs.append(job)
    capacity = {unit: total // 10 for unit, total in UNITS.items()}
    return {
        "job_queue": "bench",
        "capacity": UNITS,
        "shares": shares,
        "jobs": jobs,
        "events": [
            {"at": round(clock / 2), "update_share": {"name": "team-3", "capacity": capacity}},
        ],
        "settings": {"preemption_delay": 60},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    command = Path(sys.executable).with_name("airflow-quota")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.json"
        path.write_text(json.dumps(make_scenario(args.jobs)))
        walls = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            done = subprocess.run(
                [str(command), "simulate", str(path), "--json"],
                check=True,
                capture_output=True,
                text=True,
            )
            walls.append(time.perf_counter() - start)
        metrics = json.loads(done.stdout)["metrics"]
    wall = statistics.median(walls)
    print(f"python {sys.version.split()[0]}, {args.jobs:,} jobs, 10 shares, 2 units")
    print(
        f"simulated {metrics['end'] / 86400:.1f} days, {metrics['cycles']:,} cycles, "
        f"{metrics['preemptions']:,} preemptions, jobs {metrics['jobs']}, "
        f"utilization {metrics['utilization']}, "
        f"mean total wait {metrics['total_wait_seconds']['mean']} s"
    )
    verdict = "within" if wall <= BOUND_SECONDS else "OVER"
    runs = ", ".join(f"{w:.2f}" for w in walls)
    print(f"wall {wall:.2f} s median of {runs}; {verdict} the {BOUND_SECONDS:g} s bound")
    return 0 if wall <= BOUND_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
