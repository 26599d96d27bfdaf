"""``explain`` by id, ARN or name; the work a checkpointed job lost; ``--endpoint-url``.

In-process through ``airflow_quota_provider.cli.main`` against the local endpoint,
as ``test_cli_status.py`` does in subprocesses.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from airflow_quota_provider.checkpoints import checkpoint_interval
from airflow_quota_provider.cli import build_parser, main
from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from airflow_quota_provider.emulator.bootstrap import apply_config
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.view.backend import BatchBackend
from airflow_quota_provider.view.text import Style, event_lines
from tests.emulator.conftest import P4D, QUEUE, Endpoint, submit, training_payload

pytestmark = pytest.mark.usefixtures("aws_env")

CHECKPOINTS = {"S3Uri": "s3://bucket/ckpt/borrower"}
OTHER_QUEUE = QueueConfig(
    job_queue="other",
    capacity={P4D: 2},
    shares=(Share("team", {P4D: 2}, Sharing.RESERVE),),
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    """The exit code, stdout's lines, stderr. (In this process Airflow's logging, set up by
    other tests, also writes the hook's INFO lines to stdout; a command run on its own
    keeps them out.)"""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def exit_and_err(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code, _, err = run(capsys, *argv)
    return code, err


def preempt_a_checkpointed_borrower(endpoint: Endpoint) -> str:
    """vision's job borrows nlp's idle p4d, checkpointing without saying how often; nlp
    reclaims them 1000 s later."""
    batch = endpoint.batch
    submit(batch, "vision", 2, name="own", duration=36000)
    borrower = submit(
        batch,
        "vision",
        2,
        name="borrower",
        duration=36000,
        payload=training_payload(2, CheckpointConfig=CHECKPOINTS),
    )
    endpoint.advance(1000)
    submit(batch, "nlp", 2, name="reclaimer", duration=36000)
    endpoint.advance(60)
    return borrower


@pytest.mark.parametrize(
    ("request_", "tags", "expected"),
    [
        pytest.param({"CheckpointConfig": CHECKPOINTS}, {}, 300.0, id="checkpoints, no tag"),
        pytest.param(
            {"CheckpointConfig": CHECKPOINTS},
            {"emulator:checkpoint-interval-seconds": "250"},
            250.0,
            id="the job's tag",
        ),
        pytest.param(
            {
                "CheckpointConfig": CHECKPOINTS,
                "Tags": [{"Key": "emulator:checkpoint-interval-seconds", "Value": "120"}],
            },
            {},
            120.0,
            id="the payload's tag",
        ),
        pytest.param(
            {
                "CheckpointConfig": CHECKPOINTS,
                "Tags": [{"Key": "emulator:checkpoint-interval-seconds", "Value": "120"}],
            },
            {"emulator:checkpoint-interval-seconds": "600"},
            600.0,
            id="the job's tag wins",
        ),
        pytest.param(
            {"CheckpointConfig": CHECKPOINTS},
            {"emulator:checkpoint-interval-seconds": "often"},
            300.0,
            id="an unreadable tag",
        ),
        pytest.param({}, {"emulator:checkpoint-interval-seconds": "250"}, None, id="no S3Uri"),
        pytest.param({"CheckpointConfig": {"S3Uri": ""}}, {}, None, id="an empty S3Uri"),
    ],
)
def test_how_often_a_job_checkpoints(
    request_: dict[str, Any], tags: dict[str, str], expected: float | None
) -> None:
    assert checkpoint_interval(request_, tags) == expected


def test_a_checkpointed_job_loses_only_the_work_since_its_last_default_checkpoint(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    borrower = preempt_a_checkpointed_borrower(endpoint)
    view = BatchBackend(BatchQuotaHook(aws_conn_id=None)).queue(QUEUE)
    [event] = view.events
    held = (event.stopped_at - event.started_at) / 1000
    assert (event.job_id, event.checkpointed) == (borrower, True)
    assert event.work_lost == pytest.approx(2 * (held % 300))
    assert "(no checkpoint)" not in event_lines([event], Style())[1]
    code, out, err = run(capsys, "events")
    assert (code, err) == (0, "")
    [row] = [line for line in out if borrower in line]
    assert f"{event.work_lost / 3600:.2f} instance-h" in row and "no checkpoint" not in row
    code, out, err = run(capsys, "explain", borrower)
    assert (code, err) == (0, "")
    assert f"    work lost: {event.work_lost / 3600:.2f} instance-h" in out


def test_explain_takes_the_arn_or_a_unique_name(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = submit(endpoint.batch, "nlp", 1, name="finetune")
    arn = f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}"
    for argv in ([job_id], [arn], ["finetune"], ["finetune", "--job-queue", QUEUE]):
        code, out, err = run(capsys, "explain", *argv)
        assert (code, err) == (0, "")
        assert f"{job_id} SUBMITTED" in out
    backend = BatchBackend(BatchQuotaHook(aws_conn_id=None))
    assert backend.explain(arn).job.job_id == job_id
    assert backend.explain("finetune", f"arn:aws:batch:us-east-1:123456789012:job-queue/{QUEUE}")


def test_a_name_two_jobs_have_is_refused_with_both(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    apply_config(endpoint.emulator, OTHER_QUEUE)
    first = submit(endpoint.batch, "nlp", 1, name="twin")
    endpoint.advance(1)
    second = submit(endpoint.batch, "vision", 1, name="twin")
    endpoint.advance(1)
    third = endpoint.batch.submit_service_job(
        jobName="twin",
        jobQueue="other",
        quotaShareName="team",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(training_payload()),
    )["jobId"]
    code, err = exit_and_err(capsys, "explain", "twin", "--job-queue", QUEUE)
    assert code == 1
    assert err == (
        "error: 2 service jobs are named 'twin'; give the id (or ARN) of one: "
        f"{second} (SCHEDULED, job queue {QUEUE}); {first} (SCHEDULED, job queue {QUEUE})\n"
    )
    code, out, err = run(capsys, "explain", "twin")
    assert code == 1 and err.startswith("error: 3 service jobs are named 'twin'; ")
    assert f"{third} (SUBMITTED, job queue other)" in err
    code, out, err = run(capsys, "explain", "twin", "--job-queue", "other")
    assert (code, err) == (0, "")
    assert any(line.startswith(f"{third} SUBMITTED") for line in out)


def test_unknown_names_ids_arns_and_queues(
    endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_and_err(capsys, "explain", "ghost") == (
        1,
        f"error: service job 'ghost' does not exist: no job of job queue {QUEUE} has that "
        "id, ARN or name\n",
    )
    foreign = "arn:aws:batch:eu-west-1:123456789012:service-job/ghost"
    assert exit_and_err(capsys, "explain", foreign) == (
        1,
        f"error: service job '{foreign}' does not exist\n",
    )
    assert exit_and_err(capsys, "explain", "ghost", "--job-queue", "nope") == (
        1,
        f"error: job queue 'nope' does not exist; the job queues are: {QUEUE}\n",
    )


@pytest.mark.parametrize("command", [["status"], ["events"], ["explain", "JOB"]])
def test_endpoint_url_overrides_the_environment(
    endpoint: Endpoint,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    job_id = submit(endpoint.batch, "nlp", 1, name="finetune")
    argv = [job_id if word == "JOB" else word for word in command]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert exit_and_err(capsys, *argv, "--endpoint-url", endpoint.url) == (0, "")
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.url)
    code, err = exit_and_err(capsys, *argv, "--endpoint-url", "http://127.0.0.1:9")
    assert code == 1 and "failed (EndpointConnectionError)" in err


def test_endpoint_url_reads_as_in_plan_and_apply() -> None:
    subcommands = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert isinstance(subcommands, argparse._SubParsersAction)
    commands = subcommands.choices

    def help_of(command: str) -> list[tuple[str, str | None]]:
        options = commands[command]._option_string_actions
        return [
            (name, options[name].help) for name in ("--aws-conn-id", "--region", "--endpoint-url")
        ]

    assert help_of("status") == help_of("explain") == help_of("events") == help_of("plan")
    assert help_of("apply") == help_of("plan")
