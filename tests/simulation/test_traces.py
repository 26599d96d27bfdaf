"""Reading job traces: both formats, every malformed-row message word for word."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_quota_provider.exceptions import ScenarioError
from airflow_quota_provider.simulation.scenario import JobSpec
from airflow_quota_provider.simulation.traces import (
    MAX_PROBLEMS_SHOWN,
    TraceFormat,
    read_trace,
    refusal_summary,
)

HEADER = "id,submit_seconds,share,priority,unit,count,duration_seconds"


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path: Path, trace_format: TraceFormat = TraceFormat.CSV) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        read_trace(path, trace_format)
    assert caught.value.source == str(path)
    return [str(p) for p in caught.value.problems]


def test_csv_rows_become_jobs_with_optional_columns_left_unset_when_empty(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{HEADER},checkpoint_interval_seconds,preemption_retries\n"
        "a,0,nlp,10,gpu,2,3600,,\n"
        "b,12.5,cv,0,ml.p4d.24xlarge,1,60.5,600,2\n"
        "\n",
    )
    trace = read_trace(path)
    assert trace.source == str(path)
    assert trace.jobs == (
        JobSpec("a", "nlp", {"gpu": 2}, 3600.0, 0.0, 10, None, None),
        JobSpec("b", "cv", {"ml.p4d.24xlarge": 1}, 60.5, 12.5, 0, 2, 600.0),
    )


def test_columns_may_come_in_any_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "share,id,unit,count,duration_seconds,priority,submit_seconds\nnlp,a,gpu,1,10,0,5\n",
    )
    assert read_trace(path).jobs == (JobSpec("a", "nlp", {"gpu": 1}, 10.0, 5.0, 0),)


def test_helios_rows_are_read_as_published(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "submit_minute,team,gpus,run_minutes,observed_wait_minutes,running_at_start,running_at_end\n"
        "0,vc3sl,1,19,0,1,0\n"
        "7,vc6YE,8,2,3,0,1\n",
    )
    assert read_trace(path, TraceFormat.HELIOS).jobs == (
        JobSpec("job-2", "vc3sl", {"gpu": 1}, 1140.0, 0.0),
        JobSpec("job-3", "vc6YE", {"gpu": 8}, 120.0, 420.0),
    )


def test_load_divides_submit_times_and_checkpoints_fill_in_only_missing_ones(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        f"{HEADER},checkpoint_interval_seconds\na,120,nlp,0,gpu,1,10,\nb,60,nlp,0,gpu,1,10,30\n",
    )
    trace = read_trace(path).at_load(1.2).with_checkpoints(900)
    assert [(j.submit, j.checkpoint_interval) for j in trace.jobs] == [(100.0, 900), (50.0, 30.0)]
    assert read_trace(path).at_load(1).with_checkpoints(None).jobs == read_trace(path).jobs


def test_every_malformed_value_is_named_by_line_column_and_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{HEADER},checkpoint_interval_seconds,preemption_retries\n"
        ",-1,bad share!,10000,gpu?,0,0,0,-1\n"
        "b,soon,nlp,high,gpu,two,inf,x,1.5\n"
        "c,1,nlp,0,gpu,1\n"
        "d,nan,nlp,-3,gpu,1,10,,\n",
    )
    assert problems(path) == [
        "line 2, column id: must be a non-empty job id, got ''",
        "line 2, column submit_seconds: must be a number >= 0, got '-1'",
        "line 2, column share: must be a share name of 1 to 128 letters, digits, - and _, "
        "got 'bad share!'",
        "line 2, column priority: must be an integer from 0 to 9999, got '10000'",
        "line 2, column unit: must be a unit name of 1 to 64 letters, digits, ., - and _, "
        "got 'gpu?'",
        "line 2, column count: must be an integer >= 1, got '0'",
        "line 2, column duration_seconds: must be a number > 0, got '0'",
        "line 2, column checkpoint_interval_seconds: must be a number > 0, got '0'",
        "line 2, column preemption_retries: must be an integer >= 0, got '-1'",
        "line 3, column submit_seconds: must be a number >= 0, got 'soon'",
        "line 3, column priority: must be an integer from 0 to 9999, got 'high'",
        "line 3, column count: must be an integer >= 1, got 'two'",
        "line 3, column duration_seconds: must be a number > 0, got 'inf'",
        "line 3, column checkpoint_interval_seconds: must be a number > 0, got 'x'",
        "line 3, column preemption_retries: must be an integer >= 0, got '1.5'",
        "line 4: has 6 fields; the header has 9",
        "line 5, column submit_seconds: must be a number >= 0, got 'nan'",
        "line 5, column priority: must be an integer from 0 to 9999, got '-3'",
    ]


def test_a_duplicate_id_names_the_line_that_has_it(tmp_path: Path) -> None:
    path = write(tmp_path, f"{HEADER}\na,0,nlp,0,gpu,1,10\na,5,nlp,0,gpu,1,10\n")
    assert problems(path) == ["line 3, column id: duplicate id a; line 2 has it"]


def test_helios_values_are_checked_too(tmp_path: Path) -> None:
    path = write(tmp_path, "submit_minute,team,gpus,run_minutes\n-5,vc3sl,0,0\n")
    assert problems(path, TraceFormat.HELIOS) == [
        "line 2, column submit_minute: must be a number >= 0, got '-5'",
        "line 2, column gpus: must be an integer >= 1, got '0'",
        "line 2, column run_minutes: must be a number > 0, got '0'",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["is empty; expected a header line: " + HEADER]),
        (f"{HEADER}\n", ["has a header but no jobs"]),
        (
            "id,submit_seconds,share,unit,count,colour,colour\n",
            [
                "line 1: misses column priority, duration_seconds; required: " + HEADER,
                "line 1: unknown column colour, colour; allowed: "
                f"{HEADER},checkpoint_interval_seconds,preemption_retries",
                "line 1: column colour appears twice",
            ],
        ),
    ],
    ids=["empty file", "header only", "wrong header"],
)
def test_header_problems(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert problems(write(tmp_path, text)) == expected


def test_a_helios_file_read_as_csv_names_the_missing_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "submit_minute,team,gpus,run_minutes\n0,vc3sl,1,19\n")
    assert problems(path)[0] == (
        "line 1: misses column id, submit_seconds, share, priority, unit, count, "
        f"duration_seconds; required: {HEADER}"
    )


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    assert problems(tmp_path / "missing.csv") == ["no such file"]
    assert problems(tmp_path) == ["is a directory, not a file"]
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"id\xff\n")
    assert problems(binary) == ["is not UTF-8 text: invalid start byte at byte 2"]
    quoted = write(tmp_path, f'{HEADER}\n"a\n', "quoted.csv")
    assert problems(quoted) == ["is not valid csv: unexpected end of data"]
    short = write(tmp_path, f"{HEADER}\nx\n", "short.csv")
    assert problems(short) == ["line 2: has 1 field; the header has 7"]


def test_a_file_wrong_on_every_line_is_reported_up_to_a_limit(tmp_path: Path) -> None:
    rows = "".join(f"j{i},0,nlp,0,gpu,0,10\n" for i in range(MAX_PROBLEMS_SHOWN + 7))
    found = problems(write(tmp_path, f"{HEADER}\n{rows}"))
    assert len(found) == MAX_PROBLEMS_SHOWN + 1
    assert found[-1] == "and 7 more problems"


def test_the_summary_counts_refusals_by_code_with_an_example() -> None:
    assert refusal_summary("t.csv", 3, {}) == "read 3 jobs from t.csv; refused none"
    refused = {
        "a": "UNKNOWN_SHARE: share x does not exist in job queue q; its shares are nlp",
        "b": "EXCEEDS_MAX_QUOTA: the job needs 9 gpu; share nlp may hold at most 4",
        "c": "UNKNOWN_SHARE: share y does not exist in job queue q; its shares are nlp",
    }
    assert refusal_summary("t.csv", 1200, refused) == (
        "read 1,200 jobs from t.csv; refused 3: "
        "2 UNKNOWN_SHARE (e.g. a: share x does not exist in job queue q; its shares are nlp); "
        "1 EXCEEDS_MAX_QUOTA (e.g. b: the job needs 9 gpu; share nlp may hold at most 4)"
    )
