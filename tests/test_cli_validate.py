"""``airflow-quota validate`` and the file loading behind it: exit codes and output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from airflow_quota_provider.cli import validate
from airflow_quota_provider.config_file import load_config, load_mapping
from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from airflow_quota_provider.exceptions import ConfigError

DAGS_QUOTA = Path(__file__).resolve().parents[1] / "dags" / "quota.yaml"

VALID = """\
job_queue: ml-training
capacity: {gpu: 16}
shares:
  - name: nlp
    capacity: {gpu: 8}
    borrow_limit: 100
  - name: cv
    capacity: {gpu: 8}
    sharing: LEND
"""

INVALID = """\
job_queue: ml-training
capacity: {gpu: 16}
shares:
  - name: nlp
    capacity: {gpu: 8}
    borow_limit: 100
  - name: cv
    capacity: {gpu: 10}
    sharing: lend
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(file: str, *, json_: bool = False) -> int:
    return validate.run(argparse.Namespace(file=file, json=json_))


# --- loading files ---------------------------------------------------------------------


def test_load_config_reads_yaml() -> None:
    assert load_config(DAGS_QUOTA).job_queue == "ml-training"


def test_load_config_reads_json(tmp_path: Path) -> None:
    data = {
        "job_queue": "q",
        "capacity": {"gpu": 4},
        "shares": [{"name": "a", "capacity": {"gpu": 4}}],
    }
    path = write(tmp_path, "quota.json", json.dumps(data))
    assert load_config(path) == QueueConfig(
        job_queue="q", capacity={"gpu": 4}, shares=(Share(name="a", capacity={"gpu": 4}),)
    )


def test_a_file_without_a_known_extension_is_read_as_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "quota.conf", VALID)
    assert load_config(path).shares[1] == Share(
        name="cv", capacity={"gpu": 8}, sharing=Sharing.LEND
    )


@pytest.mark.parametrize(
    ("name", "text", "want"),
    [
        pytest.param(
            "bad.yaml",
            "job_queue: q\ncapacity: {gpu: 4\nshares: []\n",
            "invalid YAML at line 3, column 7: expected ',' or '}', but got ':' "
            "(while parsing a flow mapping at line 2, column 11)",
            id="an unclosed brace, with the line it opened on",
        ),
        pytest.param(
            "bad.yaml",
            "job_queue: q\n  capacity: 3\n",
            "invalid YAML at line 2, column 11: mapping values are not allowed here",
            id="a wrongly indented key",
        ),
        pytest.param(
            "twice.yaml",
            "job_queue: q\ncapacity: {gpu: 4}\ncapacity: {gpu: 5}\n",
            "invalid YAML at line 3, column 1: duplicate key capacity (first at line 2)",
            id="a key written twice",
        ),
        pytest.param(
            "bad.json",
            '{"job_queue": "q",\n "capacity": }',
            "invalid JSON at line 2, column 14: Expecting value",
            id="a JSON syntax error",
        ),
        pytest.param(
            "twice.json",
            '{"job_queue": "q", "job_queue": "r"}',
            "invalid JSON: duplicate key job_queue in one object",
            id="a JSON key written twice",
        ),
        pytest.param(
            "empty.yaml",
            "",
            "the file is empty; expected a mapping such as job_queue: ..., capacity: ...",
            id="an empty file",
        ),
        pytest.param(
            "list.yaml",
            "- job_queue: q\n",
            "the top level must be a mapping of keys to values, got a list",
            id="a top level that is a list",
        ),
        pytest.param(
            "text.yaml",
            "just some text\n",
            "the top level must be a mapping of keys to values, got the str 'just some text'",
            id="a top level that is plain text",
        ),
    ],
)
def test_unusable_files(tmp_path: Path, name: str, text: str, want: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as raised:
        load_mapping(path)
    assert [str(p) for p in raised.value.problems] == [want]
    assert raised.value.source == path


def test_a_yaml_merge_key_may_be_overridden(tmp_path: Path) -> None:
    path = write(tmp_path, "merge.yaml", "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n")
    assert load_mapping(path)["m"] == {"x": 3, "y": 2}


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_mapping(tmp_path / "nope.yaml")
    assert [str(p) for p in raised.value.problems] == ["no such file"]


def test_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_mapping(tmp_path)
    assert [str(p) for p in raised.value.problems] == ["is a directory, not a file"]


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"job_queue: caf\xe9\n")
    with pytest.raises(ConfigError) as raised:
        load_mapping(path)
    assert [str(p) for p in raised.value.problems] == [
        "is not UTF-8 text: invalid continuation byte at byte 14"
    ]


def test_load_config_names_the_file_in_the_error(tmp_path: Path) -> None:
    path = write(tmp_path, "quota.yaml", INVALID)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert raised.value.source == path


def test_the_example_config_in_dags_is_valid() -> None:
    config = load_config(DAGS_QUOTA)
    assert [(s.name, dict(s.capacity), s.sharing, s.borrow_limit) for s in config.shares] == [
        ("nlp", {"ml.p4d.24xlarge": 8}, Sharing.LEND_AND_BORROW, 100),
        ("vision", {"ml.p4d.24xlarge": 6, "ml.g5.12xlarge": 16}, Sharing.LEND_AND_BORROW, -1),
        ("research", {"ml.p4d.24xlarge": 2, "ml.g5.12xlarge": 8}, Sharing.LEND, -1),
        ("prod-inference-eval", {"ml.g5.12xlarge": 8}, Sharing.RESERVE, -1),
    ]
    assert dict(config.capacity) == {"ml.p4d.24xlarge": 16, "ml.g5.12xlarge": 32}


# --- the command -----------------------------------------------------------------------


def test_a_valid_file_prints_a_summary_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "quota.yaml", VALID)
    assert run(path) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (f"{path}: OK — 2 shares, capacity gpu: 16\n", "")


def test_the_dags_example_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(str(DAGS_QUOTA)) == 0
    assert capsys.readouterr().out == (
        f"{DAGS_QUOTA}: OK — 4 shares, capacity ml.p4d.24xlarge: 16, ml.g5.12xlarge: 32\n"
    )


def test_an_invalid_file_prints_every_problem_to_stderr_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "quota.yaml", INVALID)
    assert run(path) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{path}: shares[0].borow_limit: unknown key borow_limit (did you mean borrow_limit?); "
        "allowed keys: name, capacity, sharing, borrow_limit, in_share_preemption, state, "
        "weight, min_runtime_seconds, preemption_retries, preemptible",
        f"{path}: shares[1].sharing: must be one of RESERVE, LEND, LEND_AND_BORROW, "
        "got 'lend' (did you mean LEND?)",
        f"{path}: capacity.gpu: the shares own 18 in total (nlp 8, cv 10) but the queue has 16; "
        "together they may own at most the queue's capacity, "
        "or their guarantees cannot all be met",
    ]


PAST_32_BITS = """\
job_queue: ml-training
capacity: {gpu: 2147483648, cpu: 2147483647}
shares:
  - name: nlp
    capacity: {gpu: 4294967296, cpu: 2147483647}
    borrow_limit: 100000000000
  - name: cv
    capacity: {gpu: 8}
    sharing: LEND
"""
"""Counts AWS keeps in 32-bit Integers, past 2147483647 (cpu is at the limit, and valid)."""


def test_counts_past_an_aws_integer_name_the_path_the_value_and_the_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "quota.yaml", PAST_32_BITS)
    assert run(path) == 1
    beyond = "(larger than an AWS Integer, 32 bits)"
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: capacity.gpu: must be an integer from 1 to 2147483647, got 2147483648 {beyond}",
        f"{path}: shares[0].capacity.gpu: must be an integer from 0 to 2147483647, "
        f"got 4294967296 {beyond}",
        f"{path}: shares[0].borrow_limit: must be an integer from -1 to 2147483647 "
        f"(-1 = unlimited), got 100000000000 {beyond}",
    ]


def test_the_largest_aws_integer_is_valid(tmp_path: Path) -> None:
    text = "job_queue: q\ncapacity: {gpu: 2147483647}\nshares:\n"
    text += "  - {name: a, capacity: {gpu: 2147483647}, borrow_limit: 2147483647}\n"
    config = load_config(write(tmp_path, "quota.yaml", text))
    assert (config.capacity, config.shares[0].borrow_limit) == ({"gpu": 2147483647}, 2147483647)


def test_an_unreadable_file_is_one_problem_without_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "bad.yaml", "job_queue: q\n  capacity: 3\n")
    assert run(path) == 1
    assert capsys.readouterr().err == (
        f"{path}: invalid YAML at line 2, column 11: mapping values are not allowed here\n"
    )


def test_json_output_of_a_valid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "quota.yaml", VALID)
    assert run(path, json_=True) == 0
    assert json.loads(capsys.readouterr().out) == {"valid": True, "problems": []}


def test_json_output_of_an_invalid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "quota.yaml", INVALID.replace("sharing: lend", "sharing: LEND"))
    assert run(path, json_=True) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {
        "valid": False,
        "problems": [
            {
                "path": "shares[0].borow_limit",
                "message": "unknown key borow_limit (did you mean borrow_limit?); allowed keys: "
                "name, capacity, sharing, borrow_limit, in_share_preemption, state, weight, "
                "min_runtime_seconds, preemption_retries, preemptible",
            },
            {
                "path": "capacity.gpu",
                "message": "the shares own 18 in total (nlp 8, cv 10) but the queue has 16; "
                "together they may own at most the queue's capacity, "
                "or their guarantees cannot all be met",
            },
        ],
    }


def test_json_output_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(str(tmp_path / "nope.yaml"), json_=True) == 1
    assert json.loads(capsys.readouterr().out) == {
        "valid": False,
        "problems": [{"path": "", "message": "no such file"}],
    }


def test_the_sub_command_parses_its_arguments() -> None:
    parser = argparse.ArgumentParser(prog="airflow-quota")
    validate.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["validate", "dags/quota.yaml", "--json"])
    assert (args.command, args.file, args.json, args.handler) == (
        "validate",
        "dags/quota.yaml",
        True,
        validate.run,
    )
    assert parser.parse_args(["validate", "q.yaml"]).json is False
