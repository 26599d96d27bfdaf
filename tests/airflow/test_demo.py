"""``airflow-quota demo`` (what ``make demo`` runs) end to end, as a user starts it.

It starts the endpoint and a real Airflow on SQLite, plays the story, prints
a summary and stops everything it started.

Time: about 3 min on 2 cores (``tests/DURATIONS.md``: 176 s): ``make demo`` itself, both
stories as users see them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.cli.usage import COLUMNS
from airflow_quota_provider.demo.pools_story import DAG_IDS as POOLS_DAG_IDS

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
    # airflow-quota status of the fleet: who borrows, and why each waiting task waits
    assert "borrowing, next victim if nlp reclaims (RECLAIM)" in pools
    assert (
        "NO_IDLE_CAPACITY: vision needs 4 p4d; it uses 0 of 2 and may borrow without limit "
        "(borrow_limit -1), but only 0 idle p4d can be lent to it (2 more needed)"
    ) in pools
    assert (
        "BORROWING_NOT_ALLOWED: research needs 2 p4d; it uses 2 of 2 and its sharing "
        "strategy LEND does not borrow"
    ) in pools
    assert summary_rows(pools) == {
        "pools_vision_pretrain": ["success", "Completed", "2", "1"],
        "pools_research_sweep": ["success", "Completed", "2", "1"],
        "pools_nlp_finetune": ["success", "Completed", "1", "0"],
        "pools_research_release_eval": ["success", "Completed", "1", "0"],
    }
    # each story ends with its showback report, airflow-quota usage over the story
    batch_usage = showback_rows(batch, "usage of job queue ml-training from ")
    pools_usage = showback_rows(pools, "usage of fleet p4d-pools from ")
    vision, nlp = (
        batch_usage[("vision", "ml.p4d.24xlarge")],
        batch_usage[("nlp", "ml.p4d.24xlarge")],
    )
    # hours of the endpoint's fast clock; the pools story's real seconds may round to 0.00
    assert float(vision["BORROWED H"]) > 0 and float(nlp["LENT H"]) > 0, batch_usage
    for usage, p4d in ((batch_usage, "ml.p4d.24xlarge"), (pools_usage, "p4d")):
        vision, nlp = usage[("vision", p4d)], usage[("nlp", p4d)]
        assert (vision["PREEMPTED"], vision["CAUSED"]) == ("1", "0"), usage
        assert (nlp["PREEMPTED"], nlp["CAUSED"]) == ("0", "1"), usage
    assert (batch_usage[("research", "ml.g5.12xlarge")]["PREEMPTED"]) == "1"
    assert (pools_usage[("research", "p4d")]["PREEMPTED"]) == "1"
    assert "hours are hours of each unit's slots (p4d-h)" in pools
    assert processes_of(workdir) == []
    # what Airflow and the manager's database say once everything has stopped
    tries = task_instances(workdir / "airflow" / "airflow.db")
    assert {dag_id: (state, try_number) for dag_id, (state, try_number, _) in tries.items()} == {
        "pools_vision_pretrain": ("success", 2),
        "pools_research_sweep": ("success", 2),
        "pools_nlp_finetune": ("success", 1),
        "pools_research_release_eval": ("success", 1),
    }
    events = Store(f"sqlite:///{workdir / 'airflow-quota-pool-manager.db'}").events()
    preemptions = {
        event.dag_id: (event.kind, event.preemptor.split("/")[0], event.try_number, event.fails)
        for event in events
    }
    assert len(events) == 2
    assert preemptions == {
        "pools_vision_pretrain": ("RECLAIM", "pools_nlp_finetune", 1, False),
        "pools_research_sweep": ("IN_SHARE", "pools_research_release_eval", 1, False),
    }
    for event in events:
        assert event.released_at is not None  # the victim's training job was seen stopped
        assert tries[event.dag_id][2] == event.note  # the note Airflow shows on the task


def summary_rows(out: str) -> dict[str, list[str]]:
    """The first summary table in ``out``: DAG -> state, job, attempts, preempted."""
    table = out[out.index("DAG  ") :].split("\n\n")[0].splitlines()
    return {line.split()[0]: line.split()[1:5] for line in table[1:] if line.strip()}


def showback_rows(out: str, title: str) -> dict[tuple[str, str], dict[str, str]]:
    """The showback table under ``title`` in ``out``: (share, unit) -> column -> cell."""
    lines = out[out.index(title) :].splitlines()
    assert lines[1].split() == " ".join(COLUMNS).split(), lines[1]
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for line in lines[2:]:
        if line.startswith("hours are"):
            return rows
        cells = dict(zip(COLUMNS, line.split(), strict=True))
        rows[(cells["SHARE"], cells["UNIT"])] = cells
    raise AssertionError(f"no end to the table: {lines}")


def task_instances(database: Path) -> dict[str, tuple[str, int, str | None]]:
    """Each pools DAG's task: state, try number and note, from Airflow's (stopped) SQLite DB."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        rows = db.execute(
            "SELECT ti.dag_id, ti.state, ti.try_number, note.content FROM task_instance ti "
            "LEFT JOIN task_instance_note note ON note.ti_id = ti.id "
            f"WHERE ti.dag_id IN ({', '.join('?' for _ in POOLS_DAG_IDS)})",
            POOLS_DAG_IDS,
        ).fetchall()
    return {dag_id: (state, try_number, note) for dag_id, state, try_number, note in rows}


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
