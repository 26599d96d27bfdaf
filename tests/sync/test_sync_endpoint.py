"""``airflow-quota plan`` and ``apply`` with real boto3 over HTTP against the local endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.cli import main
from tests.emulator.conftest import P4D, QUEUE, Endpoint, status, submit

CONFIG = f"""\
job_queue: {QUEUE}
capacity: {{{P4D}: 16}}
shares:
  - {{name: nlp, capacity: {{{P4D}: 8}}, borrow_limit: 100, in_share_preemption: true}}
  - {{name: vision, capacity: {{{P4D}: 6}}, sharing: LEND}}
"""


def write(tmp_path: Path, text: str, name: str = "quota.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run(capsys: pytest.CaptureFixture[str], endpoint: Endpoint, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--endpoint-url", endpoint.url])
    out, err = capsys.readouterr()
    return code, out, err


def shares(endpoint: Endpoint) -> dict[str, Any]:
    listed = endpoint.batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"]
    return {
        s["quotaShareName"]: (
            {c["capacityUnit"]: c["maxCapacity"] for c in s["capacityLimits"]},
            s["resourceSharingConfiguration"],
            s["preemptionConfiguration"]["inSharePreemption"],
        )
        for s in listed
    }


def test_apply_to_an_empty_account_creates_everything_and_a_second_apply_does_nothing(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, CONFIG)
    assert run(capsys, bare_endpoint, "plan", path)[0] == 2
    code, out, _ = run(capsys, bare_endpoint, "apply", path)
    assert code == 0
    assert (
        f"done: + create quota share nlp ({P4D}: 8, LEND_AND_BORROW, borrow_limit 100%, "
        "in-share preemption ENABLED)"
    ) in out.splitlines()
    assert "Apply complete: 5 changes made." in out
    batch = bare_endpoint.batch
    environment = batch.describe_service_environments()["serviceEnvironments"]
    assert [(e["serviceEnvironmentName"], e["capacityLimits"]) for e in environment] == [
        (f"{QUEUE}-env", [{"capacityUnit": P4D, "maxCapacity": 16}])
    ]
    queue = batch.describe_job_queues(jobQueues=[QUEUE])["jobQueues"][0]
    policy = batch.describe_scheduling_policies(arns=[queue["schedulingPolicyArn"]])
    assert policy["schedulingPolicies"][0]["quotaSharePolicy"] == {
        "idleResourceAssignmentStrategy": "FIFO"
    }
    assert shares(bare_endpoint) == {
        "nlp": ({P4D: 8}, {"strategy": "LEND_AND_BORROW", "borrowLimit": 100}, "ENABLED"),
        "vision": ({P4D: 6}, {"strategy": "LEND"}, "DISABLED"),
    }
    calls_before = bare_endpoint.stats()
    code, out, _ = run(capsys, bare_endpoint, "apply", path)
    assert (code, out.splitlines()[-1]) == (0, "No changes: AWS matches the config.")
    assert run(capsys, bare_endpoint, "plan", path)[0] == 0
    assert _writes(calls_before)["batch.CreateQuotaShare"] == {"ok": 2}
    assert _writes(bare_endpoint.stats()) == _writes(calls_before)


def _writes(stats: dict[str, Any]) -> dict[str, Any]:
    """The endpoint's counts of the operations that change something."""
    changing = ("batch.Create", "batch.Update", "batch.Delete")
    return {op: n for op, n in stats["operations"].items() if op.startswith(changing)}


def test_a_config_made_for_the_emulator_plans_no_changes_against_it(
    endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The emulator's --config creates the same names and settings apply would."""
    two_shares = f"""\
job_queue: {QUEUE}
capacity: {{{P4D}: 4, ml.g5.12xlarge: 4}}
shares:
  - {{name: nlp, capacity: {{{P4D}: 2}}}}
  - {{name: vision, capacity: {{{P4D}: 2, ml.g5.12xlarge: 4}}}}
"""
    code, out, _ = run(capsys, endpoint, "plan", write(tmp_path, two_shares))
    assert (code, out.splitlines()[1]) == (0, "No changes: AWS matches the config.")


def test_changing_a_share_capacity_and_strategy_updates_it(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))[0] == 0
    changed = CONFIG.replace(
        f"{{name: vision, capacity: {{{P4D}: 6}}, sharing: LEND}}",
        f"{{name: vision, capacity: {{{P4D}: 4}}, sharing: LEND_AND_BORROW, borrow_limit: 50}}",
    )
    path = write(tmp_path, changed, "changed.yaml")
    code, out, _ = run(capsys, bare_endpoint, "plan", path)
    assert code == 2
    assert out.splitlines()[1] == (
        f"  ~ update quota share vision: capacity {P4D} 6 -> 4; "
        "strategy LEND -> LEND_AND_BORROW; borrow_limit (none) -> 50%"
    )
    assert run(capsys, bare_endpoint, "apply", path)[0] == 0
    assert shares(bare_endpoint)["vision"] == (
        {P4D: 4},
        {"strategy": "LEND_AND_BORROW", "borrowLimit": 50},
        "DISABLED",
    )
    assert run(capsys, bare_endpoint, "plan", path)[0] == 0


def test_a_deletion_is_refused_without_the_flag_changing_nothing_and_made_with_it(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))[0] == 0
    # nlp grows into vision's capacity, which needs vision deleted first
    only_nlp = CONFIG.replace(f"{P4D}: 8}}", f"{P4D}: 16}}").split("  - {name: vision")[0]
    path = write(tmp_path, only_nlp, "only-nlp.yaml")
    code, out, err = run(capsys, bare_endpoint, "apply", path)
    assert code == 1
    assert err.splitlines() == [
        "error: apply refused, nothing was changed: these changes are destructive; "
        "run again with --allow-destructive to make them:",
        "  - delete quota share vision (destructive: not in the config)",
    ]
    assert set(shares(bare_endpoint)) == {"nlp", "vision"}
    assert shares(bare_endpoint)["nlp"][0] == {P4D: 8}
    code, out, _ = run(capsys, bare_endpoint, "apply", path, "--allow-destructive")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("done:")] == [
        "done: - delete quota share vision (destructive: not in the config)",
        f"done: ~ update quota share nlp: capacity {P4D} 8 -> 16",
    ]
    assert shares(bare_endpoint) == {
        "nlp": ({P4D: 16}, {"strategy": "LEND_AND_BORROW", "borrowLimit": 100}, "ENABLED")
    }


def test_lowering_a_share_below_its_running_job_is_destructive(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))[0] == 0
    job = submit(bare_endpoint.batch, "nlp", 4, duration=3600)
    bare_endpoint.advance(10)
    assert status(bare_endpoint.batch, job) == "RUNNING"
    lowered = write(tmp_path, CONFIG.replace(f"{P4D}: 8}}", f"{P4D}: 2}}"), "lowered.yaml")
    code, out, _ = run(capsys, bare_endpoint, "plan", lowered)
    assert code == 2
    assert out.splitlines()[1:3] == [
        f"  ~ update quota share nlp: capacity {P4D} 8 -> 2 "
        f"(destructive: {P4D} 8 -> 2 is below the 4 in use by share nlp now)",
        "Plan: 0 to create, 1 to update, 0 to delete; 1 destructive "
        "(apply needs --allow-destructive).",
    ]
    assert run(capsys, bare_endpoint, "apply", lowered)[0] == 1
    assert shares(bare_endpoint)["nlp"][0] == {P4D: 8}
    assert run(capsys, bare_endpoint, "apply", lowered, "--allow-destructive")[0] == 0
    assert shares(bare_endpoint)["nlp"][0] == {P4D: 2}


def test_an_aws_error_is_reported_with_the_operation_and_aws_message(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The endpoint refuses to delete a share with unfinished jobs, as AWS does."""
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))[0] == 0
    submit(bare_endpoint.batch, "vision", 1, duration=3600)
    without_vision = write(tmp_path, CONFIG.split("  - {name: vision")[0], "no-vision.yaml")
    code, _, err = run(capsys, bare_endpoint, "apply", without_vision, "--allow-destructive")
    assert code == 1
    assert err.splitlines() == [
        "error: DeleteQuotaShare failed (ClientException): quota share vision has 1 unfinished "
        "jobs; terminate them or let them finish first; the changes marked done above were made"
    ]


def test_an_unreachable_endpoint_is_an_error_naming_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["plan", write(tmp_path, CONFIG), "--endpoint-url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(
        "error: DescribeServiceEnvironments failed (EndpointConnectionError): "
        'Could not connect to the endpoint URL: "http://127.0.0.1:9/'
    )


def test_a_fair_share_policy_under_the_name_blocks_plan_and_apply(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare_endpoint.batch.create_scheduling_policy(
        name=f"{QUEUE}-policy", fairsharePolicy={"shareDecaySeconds": 0}
    )
    path = write(tmp_path, CONFIG)
    code, out, _ = run(capsys, bare_endpoint, "plan", path)
    assert code == 1
    assert "Cannot be changed in place (apply refuses to run):" in out
    code, _, err = run(capsys, bare_endpoint, "apply", path, "--allow-destructive")
    assert code == 1
    assert err.startswith("error: apply refused, nothing was changed: AWS cannot make these")
    assert bare_endpoint.batch.describe_service_environments()["serviceEnvironments"] == []


BAD = f"""\
job_queue: {QUEUE}
service_environment: "no spaces allowed"
job_queue_priority: 5000
capacity: {{{P4D}: 4}}
shares:
  - {{name: nlp, capacity: {{{P4D}: 8}}, sharing: lend}}
"""


def test_a_bad_file_prints_every_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, BAD)
    assert main(["apply", path, "--endpoint-url", "http://127.0.0.1:9"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: shares[0].capacity.{P4D}: must be at most 4 (the queue's capacity of {P4D}), "
        "got 8",
        f"{path}: shares[0].sharing: must be one of RESERVE, LEND, LEND_AND_BORROW, "
        "got 'lend' (did you mean LEND?)",
        f"{path}: service_environment: must be a service environment name of 1 to 128 "
        "letters, digits, hyphens (-) and underscores (_), got 'no spaces allowed'",
        f"{path}: job_queue_priority: must be an integer from 0 to 1000 (the job queue's "
        "priority), got 5000",
    ]


def test_the_command_runs_as_a_subprocess_against_the_endpoint(
    bare_endpoint: Endpoint, tmp_path: Path
) -> None:
    path = write(tmp_path, CONFIG)
    command = [sys.executable, "-m", "airflow_quota_provider.cli"]
    env = {**os.environ, "AWS_ENDPOINT_URL": bare_endpoint.url}
    applied = subprocess.run(
        [*command, "apply", path], env=env, capture_output=True, text=True, timeout=60
    )
    assert applied.returncode == 0, applied.stderr
    planned = subprocess.run(
        [*command, "plan", path, "--endpoint-url", bare_endpoint.url],
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (planned.returncode, planned.stdout.splitlines()[1]) == (
        0,
        "No changes: AWS matches the config.",
    )


def test_an_airflow_connection_names_the_endpoint(
    bare_endpoint: Endpoint,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection = {
        "conn_type": "aws",
        "login": "testing",
        "password": "testing",
        "extra": {"endpoint_url": bare_endpoint.url, "region_name": "us-east-1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_QUOTA_SYNC", json.dumps(connection))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "wrong")
    code = main(["apply", write(tmp_path, CONFIG), "--aws-conn-id", "quota_sync"])
    assert (code, capsys.readouterr().out.splitlines()[-1]) == (
        0,
        "Apply complete: 5 changes made.",
    )
    assert set(shares(bare_endpoint)) == {"nlp", "vision"}


PAST_32_BITS = f"""\
job_queue: {QUEUE}
capacity: {{{P4D}: 2147483648}}
shares:
  - {{name: nlp, capacity: {{{P4D}: 8}}, borrow_limit: 2147483648}}
"""


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_counts_past_an_aws_integer_are_refused_before_any_call(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = write(tmp_path, PAST_32_BITS)
    code, out, err = run(capsys, bare_endpoint, command, path)
    beyond = "(larger than an AWS Integer, 32 bits)"
    assert (code, out, err.splitlines()) == (
        1,
        "",
        [
            f"{path}: capacity.{P4D}: must be an integer from 1 to 2147483647, "
            f"got 2147483648 {beyond}",
            f"{path}: shares[0].borrow_limit: must be an integer from -1 to 2147483647 "
            f"(-1 = unlimited), got 2147483648 {beyond}",
        ],
    )
    assert bare_endpoint.stats()["requests"] == 0
