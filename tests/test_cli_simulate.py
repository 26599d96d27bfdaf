"""``airflow-quota simulate`` as users run it: a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from airflow_quota_provider.simulation.figures import LEGEND


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "simulate", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_a_file_it_replays_the_embedded_example_as_a_timeline() -> None:
    done = run()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["t", "event", "job", "share", "detail"]
    assert any("RECLAIM for nlp-urgent" in line for line in lines)
    assert any(line.startswith("vision-augment") and "FAILED" in line for line in lines)
    # both waits, named, in human units; what they count is said under them
    assert lines[-2:] == [
        "utilization: ml.g5.12xlarge 21%, ml.p4d.24xlarge 66%; preemptions: 4; mean wait "
        "11m 49s (max 1h 10m), mean first wait 1m 22s; ended at t=11660 (3h 14m)",
        LEGEND[0],
    ]


def test_json_prints_every_job_and_the_metrics(tmp_path: Path) -> None:
    scenario = {
        "job_queue": "q",
        "capacity": {"gpu": 4},
        "shares": [{"name": "nlp", "capacity": {"gpu": 4}}],
        "jobs": [{"id": "a", "share": "nlp", "demand": {"gpu": 4}, "duration": 10}],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    done = run(str(path), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["jobs"] == {
        "a": {
            "status": "SUCCEEDED",
            "finished": 10,
            "preemptions": 0,
            "attempts": [{"start": 0, "end": 10, "outcome": "SUCCEEDED", "borrowed": {"gpu": 0}}],
        }
    }
    assert result["metrics"]["utilization"] == {"gpu": 1.0}


def test_a_bad_file_prints_every_problem_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("job_queue: q\ncapacity: {gpu: 4}\nshares: []\njobs: [{id: a}]\n")
    done = run(str(path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"{path}: shares: must be a list of 1 to 20 quota shares, got an empty list",
        f"{path}: jobs[0].share: is required (the quota share it is submitted to)",
        f"{path}: jobs[0].demand: is required (instances per unit, e.g. {{gpu: 2}})",
        f"{path}: jobs[0].duration: is required (seconds of work)",
    ]


def test_a_negative_until_is_refused() -> None:
    done = run("--until", "-5")
    assert done.returncode == 2
    assert done.stderr.strip() == "--until must be >= 0 seconds, got -5"
