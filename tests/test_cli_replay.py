"""``airflow-quota simulate --config --trace`` as users run it: a real subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from airflow_quota_provider.simulation.figures import LEGEND
from tests.test_cli_simulate import run

CONFIG = {
    "job_queue": "q",
    "capacity": {"gpu": 4},
    "shares": [{"name": "a", "capacity": {"gpu": 2}}, {"name": "b", "capacity": {"gpu": 2}}],
}
TRACE = (
    "id,submit_seconds,share,priority,unit,count,duration_seconds\n"
    "b1,0,b,0,gpu,4,100\n"
    "a1,10,a,0,gpu,2,50\n"
    "x1,20,nobody,0,gpu,1,5\n"
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    config = tmp_path / "quota.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    return str(config), str(trace)


def test_json_replay_with_settings_and_the_summary_line(files: tuple[str, str]) -> None:
    config, trace = files
    done = run(
        "--config", config, "--trace", trace, "--json",
        "--preemption-delay", "5", "--checkpoint-interval", "10", "--load", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"read 3 jobs from {trace}; refused 1: 1 UNKNOWN_SHARE (e.g. x1: share nobody does "
        "not exist in job queue q; its shares are a, b)"
    ]
    data = json.loads(done.stdout)
    assert data["replay"]["load"] == 2
    metrics = data["metrics"]
    assert metrics["per_share"]["a"]["guarantee_violation_unit_seconds"] == {"gpu": 10}
    # b1 stops at 10 s of work, just checkpointed: nothing lost
    assert metrics["per_share"]["b"]["lost_work_unit_seconds"] == 0
    assert metrics["jobs"]["rejected"] == 1
    assert data["jobs"]["a1"]["attempts"][0]["start"] == 10


def test_compare_prints_policies_side_by_side_and_writes_a_report(
    files: tuple[str, str], tmp_path: Path
) -> None:
    config, trace = files
    report = tmp_path / "report"
    done = run(
        "--config", config, "--trace", trace, "--compare", "aws,pooled",
        "--report", str(report), "--min-runtime", "30",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "load 1"
    assert lines[1].split()[:2] == ["policy", "utilization"]
    assert lines[2].split()[0] == "aws" and lines[3].split()[0] == "pooled"
    assert "share mean wait" in done.stdout
    assert lines[-2:] == list(LEGEND)
    assert (report / "report.md").exists() and (report / "wait-cdf.png").exists()
    assert f"report written to {report / 'report.md'}" in done.stderr


def test_one_policy_prints_a_table_by_share(files: tuple[str, str]) -> None:
    config, trace = files
    done = run("--config", config, "--trace", trace, "--policy", "static")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("static at load 1: 1 succeeded, 0 failed, 2 refused;")
    assert [line.split()[0] for line in lines[1:6]] == ["share", "a", "b", "nobody", "all"]
    assert lines[6:] == list(LEGEND)


def test_malformed_trace_rows_are_listed_with_file_and_line(
    files: tuple[str, str], tmp_path: Path
) -> None:
    config, _ = files
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "id,submit_seconds,share,priority,unit,count,duration_seconds\na,x,b,0,gpu,1,5\n"
    )
    done = run("--config", config, "--trace", str(bad))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{bad}: line 2, column submit_seconds: must be a number >= 0, got 'x'"
    ]


def test_an_invalid_config_is_reported_by_path(files: tuple[str, str], tmp_path: Path) -> None:
    _, trace = files
    config = tmp_path / "bad.yaml"
    config.write_text("job_queue: q\ncapacity: {gpu: 4}\nshares: []\n")
    done = run("--config", str(config), "--trace", trace)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{config}: shares: must be a list of 1 to 20 quota shares, got an empty list"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--trace", "t.csv"], "a trace replay needs both --config FILE and --trace FILE"),
        (["s.yaml", "--load", "1.2"], "a trace replay takes --config and --trace, not a "
         "scenario file (s.yaml)"),
        (["--config", "c", "--trace", "t", "--until", "5"],
         "--until applies to scenario files; a trace replay runs to its last job"),
        (["--config", "c", "--trace", "t", "--policy", "aws", "--compare", "aws,static"],
         "give either --policy or --compare, not both"),
        (["--config", "c", "--trace", "t", "--policy", "pooled", "--victim-order",
          "least_work_lost"],
         "--idle-assignment, --min-runtime and --victim-order are extensions of the aws "
         "policy; the policies replayed are pooled"),
    ],
    ids=["trace without config", "scenario file too", "until", "policy and compare",
         "extension without aws"],
)  # fmt: skip
def test_misuse_is_refused_with_exit_2(args: list[str], message: str) -> None:
    done = run(*args)
    assert (done.returncode, done.stderr.strip()) == (2, message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--load", "0"], "argument --load: must be a number > 0, got '0'"),
        (["--preemption-delay", "-1"],
         "argument --preemption-delay: must be a number >= 0, got '-1'"),
        (["--checkpoint-interval", "soon"],
         "argument --checkpoint-interval: must be a number > 0, got 'soon'"),
        (["--compare", "aws,fifo"],
         "argument --compare: must be policies separated by commas (aws, static, pooled), got "
         "'aws,fifo'"),
        (["--compare", "aws,aws"], "argument --compare: names a policy twice: 'aws,aws'"),
    ],
    ids=["load", "delay", "checkpoint", "unknown policy", "policy twice"],
)  # fmt: skip
def test_bad_values_are_refused_by_the_parser(args: list[str], message: str) -> None:
    done = run("--config", "c", "--trace", "t", *args)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"airflow-quota simulate: error: {message}"


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        ("out", "{path} is a file; give a directory for report.md and the plots"),
        ("out/report", "cannot create directory {path}: {parent} is a file"),
    ],
    ids=["an existing file", "below a file"],
)
def test_a_report_folder_that_cannot_be_written_is_refused_before_the_replay(
    files: tuple[str, str], tmp_path: Path, report: str, problem: str
) -> None:
    config, trace = files
    (tmp_path / "out").write_text("not a folder")
    path = tmp_path / report
    done = run("--config", config, "--trace", trace, "--report", str(path))
    message = problem.format(path=path, parent=tmp_path / "out")
    # one line, exit 2 as for any bad argument, and nothing replayed (no summary line)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"airflow-quota simulate: error: argument --report: {message}\n",
    )


# Python's documented way to make an import fail: a None entry in sys.modules
WITHOUT_MATPLOTLIB = (
    "import sys; sys.modules['matplotlib'] = None; "
    "from airflow_quota_provider.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_without_matplotlib_a_report_is_refused_naming_the_extra_and_a_replay_still_runs(
    files: tuple[str, str], tmp_path: Path
) -> None:
    config, trace = files
    report = tmp_path / "report"

    def simulate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", WITHOUT_MATPLOTLIB, "simulate", "--config", config,
             "--trace", trace, *args],
            capture_output=True, text=True, check=False,
        )  # fmt: skip

    done = simulate("--report", str(report))
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "airflow-quota simulate: error: argument --report: a report needs matplotlib, which "
        "is not installed; install it with: pip install 'airflow-quota-provider[report]'\n",
    )
    assert not report.exists()
    replayed = simulate("--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["metrics"]["jobs"]["succeeded"] == 2


def test_a_report_that_cannot_be_written_after_the_replay_is_one_error_line(
    files: tuple[str, str], tmp_path: Path
) -> None:
    config, trace = files
    (tmp_path / "out" / "report.md").mkdir(parents=True)  # the folder is fine, the file not
    done = run("--config", config, "--trace", trace, "--report", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: writing the report to {tmp_path / 'out'}: [Errno 21] Is a directory: "
        f"'{tmp_path / 'out' / 'report.md'}'"
    )


def test_text_names_each_unit_and_reads_durations_while_json_keeps_seconds(
    tmp_path: Path,
) -> None:
    config = tmp_path / "quota.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "job_queue": "q",
                "capacity": {"gpu": 4, "cpu": 2},
                "shares": [
                    {"name": "a", "capacity": {"gpu": 2, "cpu": 1}},
                    {"name": "b", "capacity": {"gpu": 2, "cpu": 1}},
                ],
            }
        )
    )
    trace = tmp_path / "trace.csv"
    # j1 borrows b's gpus for 1,000,000 s; j2 waits for them until then; j3 borrows a's cpu
    trace.write_text(
        "id,submit_seconds,share,priority,unit,count,duration_seconds\n"
        "j1,0,a,0,gpu,4,1000000\nj2,1,b,0,gpu,4,245\nj3,0,b,0,cpu,2,500000\n"
    )
    done = run("--config", str(config), "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    rows = [re.split(r"\s{2,}", line) for line in done.stdout.splitlines()[1:5]]
    assert rows == [
        ["share", "utilization", "mean wait", "p95 wait", "mean first wait", "pending unit-h",
         "violation unit-h", "preemptions", "lost unit-h"],
        ["a", "cpu 0.0%, gpu 200.0%", "0s", "0s", "0s", "0", "0", "0", "0"],
        # j2 waited 999,999 s, j3 none
        ["b", "cpu 100.0%, gpu 0.1%", "5d 19h", "11d 14h", "5d 19h", "1,111", "0", "0", "0"],
        ["all", "cpu 50.0%, gpu 100.0%", "3d 21h", "11d 14h", "3d 21h", "1,111", "0", "0", "0"],
    ]  # fmt: skip
    metrics = json.loads(run("--config", str(config), "--trace", str(trace), "--json").stdout)
    assert metrics["metrics"]["per_share"]["b"]["total_wait_seconds"]["max"] == 999_999
    # 2 cpu for 500,000 s of 2 over 1,000,246 s: the text rounds it to 50.0%
    assert metrics["metrics"]["utilization"] == {"cpu": 0.4999, "gpu": 1.0}
