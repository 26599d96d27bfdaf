"""``airflow-quota demo`` (what ``make demo`` runs) end to end, as a user starts it.

It starts the endpoint and a real Airflow on SQLite, plays the story, prints
a summary and stops everything it started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_tells_the_story_and_leaves_nothing_behind(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    command = [
        sys.executable,
        "-m",
        "airflow_quota_provider.cli",
        "demo",
        "--workdir",
        str(workdir),
    ]
    done = subprocess.run(
        [*command, "--time-scale", "300"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "AWS_"))},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    assert "share vision borrows 4 ml.p4d.24xlarge (uses 10, owns 6)" in out
    assert "vision_pretrain-pretrain: Cross-share preemption triggered to reclaim" in out
    assert "vision_pretrain-pretrain RUNNING -> RUNNABLE: NO_IDLE_CAPACITY" in out
    assert "research_sweep-sweep: In-share preemption triggered by a higher priority" in out
    batch, pools = out.split("Now the same teams without AWS Batch")
    assert summary_rows(batch) == {
        "vision_pretrain": ["success", "SUCCEEDED", "2", "1"],
        "research_sweep": ["success", "SUCCEEDED", "2", "1"],
        "nlp_finetune": ["success", "SUCCEEDED", "1", "0"],
        "research_release_eval": ["success", "SUCCEEDED", "1", "0"],
    }
    # the pools fleet: the manager reclaims vision's borrowed p4d and research's release
    # evaluation preempts its sweep; both resume from their checkpoints
    assert "pools_vision_pretrain: try 1 trains on 4 p4d" in pools
    assert "pools_vision_pretrain preempted: its training job" in pools
    assert "(RECLAIM): share vision borrows 2 p4d (uses 4, owns 2)" in pools
    assert "pools_research_sweep preempted: its training job" in pools
    assert "(IN_SHARE)" in pools
    assert "pools_vision_pretrain ran again and resumed from the checkpoint" in pools
    assert "pools_research_sweep ran again and resumed from the checkpoint" in pools
    assert "share" in pools and "borrow" in pools  # airflow-quota status of the fleet
    assert summary_rows(pools) == {
        "pools_vision_pretrain": ["success", "Completed", "2", "1"],
        "pools_research_sweep": ["success", "Completed", "2", "1"],
        "pools_nlp_finetune": ["success", "Completed", "1", "0"],
        "pools_research_release_eval": ["success", "Completed", "1", "0"],
    }
    assert processes_of(workdir) == []


def summary_rows(out: str) -> dict[str, list[str]]:
    """The first summary table in ``out``: DAG -> state, job, attempts, preempted."""
    table = out[out.index("DAG  ") :].split("\n\n")[0].splitlines()
    return {line.split()[0]: line.split()[1:5] for line in table[1:] if line.strip()}


def processes_of(workdir: Path) -> list[str]:
    """Processes whose command line or environment names ``workdir`` (Airflow's home is in it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            seen = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if str(workdir).encode() in seen:
            found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()!r}")
    return found
