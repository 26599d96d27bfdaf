"""A task instance's per-try training jobs, the trigger that follows one, and how a killed
try stops its job: against the local endpoint over real HTTP."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.hooks.sagemaker import (
    PREEMPTED_TAG,
    TrainingTries,
    tag_value,
)
from airflow_quota_provider.triggers.sagemaker import TrainingJobTrigger, observe, stop_try
from tests.emulator.conftest import Endpoint, serve, training_payload

TASK = TaskKey("team_a", "manual__2026-12-03T10:00:00+00:00", "train", -1)
OTHER = TaskKey("team_a", "manual__2026-12-04T10:00:00+00:00", "train", -1)
CHECKPOINTS = {"S3Uri": "s3://bucket/checkpoints/team_a"}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    yield from serve(None)


def five_seconds_later(endpoint: Endpoint) -> Callable[[float], None]:
    """A ``sleep`` for :class:`TrainingTries` that moves the endpoint's clock instead."""

    def sleep(seconds: float) -> None:
        endpoint.advance(5)

    return sleep


def create(endpoint: Endpoint, name: str, seconds: int = 600, **extra: Any) -> None:
    request = training_payload(1, TrainingJobName=name, **extra)
    request["Tags"] = [{"Key": "emulator:duration-seconds", "Value": str(seconds)}]
    endpoint.sagemaker.create_training_job(**request)


def test_earlier_tries_are_the_task_instances_own_oldest_first(endpoint: Endpoint) -> None:
    tries = TrainingTries(endpoint.sagemaker)
    for number in (2, 1, 3):
        create(endpoint, TASK.training_job_name(number))
    create(endpoint, OTHER.training_job_name(1))
    create(endpoint, TASK.training_job_name(2) + "x")  # not named by the rule
    names = [s["TrainingJobName"] for s in tries.earlier(TASK, 3)]
    assert names == [TASK.training_job_name(1), TASK.training_job_name(2)]
    assert tries.earlier(TASK, 1) == []
    assert [s["TrainingJobName"] for s in tries.earlier(OTHER, 5)] == [OTHER.training_job_name(1)]


def test_the_earlier_tries_are_found_across_pages(endpoint: Endpoint) -> None:
    tries = TrainingTries(endpoint.sagemaker)
    for number in range(1, 106):
        endpoint.sagemaker.create_training_job(
            **training_payload(1, TrainingJobName=TASK.training_job_name(number))
        )
    assert len(tries.earlier(TASK, 106)) == 105


def test_stop_waits_until_the_instances_are_free(endpoint: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(endpoint, name)
    endpoint.advance(600 - 1)  # nearly done, still InProgress
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        endpoint.advance(5)

    job = TrainingTries(endpoint.sagemaker, sleep=sleep).stop(name, wait_seconds=60, poll=1)
    assert job is not None and job["TrainingJobStatus"] == "Stopped"
    assert waited, "Stopping takes a moment"
    assert TrainingTries(endpoint.sagemaker).stop("no-such-job", 1) is None


def test_stop_gives_up_after_its_bound_with_the_job_still_stopping(endpoint: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(endpoint, name)
    job = TrainingTries(endpoint.sagemaker, sleep=lambda s: None).stop(name, 0)
    assert job is not None and job["TrainingJobStatus"] == "Stopping"


def test_a_killed_try_says_who_preempted_it_and_what_its_checkpoint_keeps(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    name = TASK.training_job_name(1)
    create(endpoint, name, CheckpointConfig=CHECKPOINTS)
    endpoint.advance(400)
    note = "Cleared by the quota pool manager for team_b/run/t (RECLAIM): share b needs 1 gpu; ok"
    tries = TrainingTries(endpoint.sagemaker, sleep=five_seconds_later(endpoint))
    assert tries.tell(name, note)
    assert tries.tell("no-such-job", note) is False
    log = logging.getLogger("test.try")
    with caplog.at_level(logging.INFO, logger="test.try"):
        stop_try(tries, name, 60, log)
    text = caplog.text
    assert f"this try is preempted: {tag_value(note)}" in text
    assert "(RECLAIM)" not in text and "RECLAIM" in text  # tag values have no parentheses
    assert f"training job {name} Stopped after " in text
    assert "s3://bucket/checkpoints/team_a is kept, and the task's next try resumes" in text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="test.try"):
        stop_try(tries, name, 60, log)
    assert f"training job {name} had already ended Stopped" in caplog.text


def test_a_killed_try_without_checkpoints_says_the_next_starts_over(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    name = TASK.training_job_name(1)
    create(endpoint, name)
    tries = TrainingTries(endpoint.sagemaker, sleep=five_seconds_later(endpoint))
    with caplog.at_level(logging.INFO, logger="test.try"):
        stop_try(tries, name, 60, logging.getLogger("test.try"))
    assert "this try is being killed" in caplog.text
    assert "without CheckpointConfig the task's next try starts over" in caplog.text


def test_the_summary_sums_the_tries(endpoint: Endpoint) -> None:
    tries = TrainingTries(endpoint.sagemaker, sleep=five_seconds_later(endpoint))
    create(endpoint, TASK.training_job_name(1), CheckpointConfig=CHECKPOINTS)
    endpoint.advance(200)
    tries.stop(TASK.training_job_name(1), 60)
    create(endpoint, TASK.training_job_name(2), CheckpointConfig=CHECKPOINTS)
    endpoint.advance(3600)
    summary = tries.summary(TASK, 2)
    assert summary["attempts"] == 2
    assert summary["preemptions"] == 1
    assert [arn.rsplit("/", 1)[-1] for arn in summary["training_job_arns"]] == [
        TASK.training_job_name(1).lower(),
        TASK.training_job_name(2).lower(),
    ]
    assert summary["queued_seconds"] > 0
    # the second job resumed from the first's checkpoint: less than 600 s of training in all
    assert 600 <= summary["run_seconds"] < 600 + 200


def test_tag_values_keep_only_what_sagemaker_allows() -> None:
    assert tag_value("a (b); c, d [0] é") == "a  b   c  d  0  é"
    assert len(tag_value("x" * 300)) == 256


def test_the_endpoint_adds_tags_and_refuses_more_than_fifty(endpoint: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(endpoint, name)
    arn = endpoint.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    endpoint.sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": PREEMPTED_TAG, "Value": "v"}])
    endpoint.sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": PREEMPTED_TAG, "Value": "w"}])
    tags = {t["Key"]: t["Value"] for t in endpoint.sagemaker.list_tags(ResourceArn=arn)["Tags"]}
    assert tags[PREEMPTED_TAG] == "w"
    many = [{"Key": f"k{i}", "Value": "v"} for i in range(49)]
    with pytest.raises(endpoint.sagemaker.exceptions.ClientError, match="at most 50 tags"):
        endpoint.sagemaker.add_tags(ResourceArn=arn, Tags=many)
    with pytest.raises(endpoint.sagemaker.exceptions.ClientError, match="not found"):
        endpoint.sagemaker.add_tags(ResourceArn=arn + "x", Tags=many[:1])


def test_observe_logs_each_transition_once_and_ends_with_the_job() -> None:
    job: dict[str, Any] = {
        "TrainingJobName": "j",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatusTransitions": [
            {"Status": "Starting", "StatusMessage": "Launching"},
            {"Status": "Training", "StatusMessage": "Resumed from the checkpoint"},
        ],
    }
    lines, event = observe(job, 1)
    assert lines == ["training job j: Training: Resumed from the checkpoint"]
    assert event is None
    ended = {**job, "TrainingJobStatus": "Failed", "FailureReason": "AlgorithmError: x"}
    _, event = observe(ended, 2)
    assert event is not None
    assert (event["status"], event["transitions_seen"]) == ("failed", 2)
    assert event["message"] == "training job j ended Failed: AlgorithmError: x"


def trigger_for(endpoint: Endpoint, name: str, **options: Any) -> TrainingJobTrigger:
    settings = {"poll_interval": 0.01, "settle_seconds": 0, "aws_conn_id": None, **options}
    return TrainingJobTrigger(training_job_name=name, **settings)


@pytest.fixture
def aws(endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch) -> Endpoint:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint.url,
    }.items():
        monkeypatch.setenv(key, value)
    return endpoint


async def first_event(trigger: TrainingJobTrigger, endpoint: Endpoint, step: float) -> Any:
    async def moving() -> None:
        while True:
            await asyncio.sleep(0.01)
            await asyncio.to_thread(endpoint.advance, step)

    clock = asyncio.create_task(moving())
    try:
        async for event in trigger.run():
            return event.payload
    finally:
        clock.cancel()


def test_the_trigger_fires_when_the_job_completes(aws: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(aws, name, seconds=120)
    event = asyncio.run(first_event(trigger_for(aws, name), aws, 10))
    assert event["status"] == "success" and event["training_job_status"] == "Completed"
    assert event["transitions_seen"] >= 4


def test_the_trigger_never_fires_sooner_than_it_settles(aws: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(aws, name, seconds=1)
    aws.advance(60)  # it has ended before the trigger starts
    started = time.monotonic()
    event = asyncio.run(first_event(trigger_for(aws, name, settle_seconds=1.5), aws, 0))
    assert event["status"] == "success"
    assert time.monotonic() - started >= 1.5


def test_the_trigger_times_out_and_leaves_the_job_running(aws: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(aws, name)
    event = asyncio.run(first_event(trigger_for(aws, name, max_wait_seconds=0.2), aws, 0))
    assert event["status"] == "timeout"
    status = aws.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
    assert status == "InProgress"


def test_the_trigger_gives_up_on_an_endpoint_that_does_not_answer(
    aws: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    trigger = trigger_for(aws, "j", max_poll_failures=2)
    event = asyncio.run(first_event(trigger, aws, 0))
    assert event["status"] == "error"
    assert "could not be read 2 polls in a row" in event["message"]


def test_the_trigger_serializes_what_it_needs_to_come_back(aws: Endpoint) -> None:
    trigger = trigger_for(aws, "j", transitions_seen=3, stop_wait_seconds=7)
    path, kwargs = trigger.serialize()
    again = TrainingJobTrigger(**kwargs)
    assert path == "airflow_quota_provider.triggers.sagemaker.TrainingJobTrigger"
    assert again.serialize() == (path, kwargs)
    assert (kwargs["transitions_seen"], kwargs["stop_wait_seconds"]) == (3, 7)


def test_the_triggers_on_kill_stops_the_job(aws: Endpoint) -> None:
    name = TASK.training_job_name(1)
    create(aws, name)
    trigger = trigger_for(aws, name, stop_wait_seconds=0)
    asyncio.run(trigger.on_kill())
    status = aws.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
    assert status == "Stopping"
    untouched = OTHER.training_job_name(1)
    create(aws, untouched)
    asyncio.run(trigger_for(aws, untouched, stop_on_kill=False).on_kill())
    status = aws.sagemaker.describe_training_job(TrainingJobName=untouched)["TrainingJobStatus"]
    assert status == "InProgress"
