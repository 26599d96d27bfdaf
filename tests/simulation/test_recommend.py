"""Proposed share capacities: the split, the candidates, and the command end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.simulation.recommend import candidates, split, work_by_share
from airflow_quota_provider.simulation.scenario import JobSpec

JOBS = (
    JobSpec("a1", "a", {"gpu": 2}, 300.0),
    JobSpec("a2", "a", {"gpu": 1}, 200.0, 10.0),
    JobSpec("b1", "b", {"gpu": 1}, 100.0, 20.0),
    JobSpec("c1", "c", {"cpu": 4}, 50.0, 30.0),
)


def test_split_by_largest_remainder_adds_up_exactly() -> None:
    assert split(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert split(7, {"a": 800, "b": 100, "c": 0}) == {"a": 6, "b": 1, "c": 0}
    assert split(5, {"a": 0, "b": 0}) == {"a": 0, "b": 0}


def test_work_is_instance_seconds_per_share_and_unit() -> None:
    assert work_by_share(JOBS) == {"a": {"gpu": 800.0}, "b": {"gpu": 100.0}, "c": {"cpu": 200.0}}


def test_candidates_split_capacity_by_work_and_half_way_from_the_current_config() -> None:
    current = parse_config(
        {
            "job_queue": "q",
            "capacity": {"gpu": 9},
            "shares": [
                {"name": "a", "capacity": {"gpu": 3}, "sharing": "RESERVE"},
                {"name": "b", "capacity": {"gpu": 6}},
            ],
        }
    )
    found = candidates("q", {"gpu": 9}, JOBS, current=current)
    assert list(found) == ["work", "blend", "current"]
    assert [(s.name, dict(s.capacity)) for s in found["work"].shares] == [
        ("a", {"gpu": 8}),
        ("b", {"gpu": 1}),
    ]
    # a: (3/9 + 8/9) / 2 of 9 = 5.5, b: (6/9 + 1/9) / 2 of 9 = 3.5; the tie goes to a
    assert [dict(s.capacity) for s in found["blend"].shares] == [{"gpu": 6}, {"gpu": 3}]
    assert all(s.borrow_limit == -1 for s in found["blend"].shares)
    assert found["current"] is current
    assert [s.name for s in candidates("r", {"gpu": 9}, JOBS)["work"].shares] == ["a", "b", "c"]


def test_the_command_replays_candidates_and_writes_the_least_waiting(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,submit_seconds,share,priority,unit,count,duration_seconds\n"
        "a1,0,a,0,gpu,4,100\na2,0,a,0,gpu,4,100\nb1,0,b,0,gpu,1,10\n"
    )
    config = tmp_path / "quota.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "job_queue": "q",
                "capacity": {"gpu": 5},
                "shares": [
                    {"name": "a", "capacity": {"gpu": 1}, "sharing": "RESERVE"},
                    {"name": "b", "capacity": {"gpu": 4}, "sharing": "RESERVE"},
                ],
            }
        )
    )
    output = tmp_path / "proposal.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "recommend", "--trace", str(trace),
         "--capacity", "gpu=5", "--config", str(config), "--output", str(output)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"read 3 jobs from {trace}; refused none"
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:4]] == ["config", "work", "blend", "current"]
    # the current config refuses a's jobs (4 gpu, a may hold 1): it never wins
    assert lines[-1] == f"least waiting: work; written to {output}"
    proposal = load_config(output)
    assert [(s.name, dict(s.capacity)) for s in proposal.shares] == [
        ("a", {"gpu": 5}),
        ("b", {"gpu": 0}),
    ]


def test_a_bad_capacity_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "recommend", "--trace", "t.csv",
         "--capacity", "gpu"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "airflow-quota recommend: error: argument --capacity: must be UNIT=COUNT with a count "
        ">= 1, e.g. gpu=856, got 'gpu'"
    )
