"""SubmitServiceJob, DescribeServiceJob, ListServiceJobs, UpdateServiceJob, TerminateServiceJob."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.emulator.conftest import P4D, QUEUE, Endpoint, status, submit, training_payload


def _refused(call: Callable[..., Any], **params: Any) -> str:
    with pytest.raises(ClientError) as raised:
        call(**params)
    assert raised.value.response["Error"]["Code"] == "ClientException"
    message: str = raised.value.response["Error"]["Message"]
    return message


def _submit_params(**extra: Any) -> dict[str, Any]:
    return {
        "jobName": "job",
        "jobQueue": QUEUE,
        "quotaShareName": "nlp",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": json.dumps(training_payload()),
        **extra,
    }


def test_describe_a_new_job(endpoint: Endpoint) -> None:
    job_id = submit(endpoint.batch, "nlp", 2, name="first", schedulingPriority=7)
    described = endpoint.batch.describe_service_job(jobId=job_id)
    del described["ResponseMetadata"]
    created = described.pop("createdAt")
    assert described == {
        "capacityUsage": [{"capacityUnit": P4D, "quantity": 2.0}],
        "isTerminated": False,
        "jobArn": f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        "jobId": job_id,
        "jobName": "first",
        "jobQueue": f"arn:aws:batch:us-east-1:123456789012:job-queue/{QUEUE}",
        "schedulingPriority": 7,
        "serviceRequestPayload": json.dumps(training_payload(2)),
        "serviceJobType": "SAGEMAKER_TRAINING",
        "quotaShareName": "nlp",
        "startedAt": 0,
        "status": "SUBMITTED",
        "tags": {"emulator:duration-seconds": "60"},
    }
    assert created == endpoint.advance(0)["now_millis"]


def test_the_same_client_token_returns_the_same_job(endpoint: Endpoint) -> None:
    first = endpoint.batch.submit_service_job(**_submit_params(clientToken="token-1"))
    again = endpoint.batch.submit_service_job(**_submit_params(clientToken="token-1"))
    assert again["jobId"] == first["jobId"]
    message = _refused(
        endpoint.batch.submit_service_job, **_submit_params(clientToken="token-1", jobName="other")
    )
    assert message == (
        "clientToken token-1 was already used by a different SubmitServiceJob request "
        f"(job {first['jobId']})"
    )
    listed = endpoint.batch.list_service_jobs(jobQueue=QUEUE, jobStatus="SUBMITTED")
    assert len(listed["jobSummaryList"]) == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(
            {"quotaShareName": "research"},
            "UNKNOWN_SHARE: share research does not exist in job queue ml-training; "
            "its shares are nlp, vision",
            id="unknown share",
        ),
        pytest.param(
            {"serviceRequestPayload": json.dumps(training_payload(5))},
            f"EXCEEDS_QUEUE_CAPACITY: the job needs 5 {P4D}; job queue ml-training has 4",
            id="more than the queue has",
        ),
        pytest.param(
            {"serviceRequestPayload": json.dumps(training_payload(1, "ml.c5.xlarge"))},
            "UNKNOWN_UNIT: job queue ml-training has no ml.c5.xlarge; "
            f"it has ml.g5.12xlarge, {P4D}",
            id="unit the queue lacks",
        ),
        pytest.param(
            {"schedulingPriority": 10000},
            "schedulingPriority must be between 0 and 9999, got 10000",
            id="priority",
        ),
        pytest.param(
            {"retryStrategy": {"attempts": 11}},
            "retryStrategy.attempts must be between 1 and 10, got 11",
            id="attempts",
        ),
        pytest.param(
            {"serviceRequestPayload": "{not json"},
            "serviceRequestPayload is not JSON: Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1)",
            id="payload not JSON",
        ),
        pytest.param(
            {"serviceRequestPayload": "{}"},
            "serviceRequestPayload: ResourceConfig with InstanceType and InstanceCount is required",
            id="payload without resources",
        ),
        pytest.param(
            {"tags": {"emulator:duration-seconds": "soon"}},
            "tag emulator:duration-seconds must be a number of seconds, got 'soon'",
            id="duration tag",
        ),
        pytest.param(
            {"shareIdentifier": "a"},
            "job queue ml-training uses quota shares: give quotaShareName, not shareIdentifier",
            id="share identifier on a quota queue",
        ),
        pytest.param({"jobQueue": "nope"}, "job queue nope does not exist", id="unknown queue"),
    ],
)
def test_submissions_that_could_never_run_are_refused(
    endpoint: Endpoint, extra: Any, message: str
) -> None:
    assert _refused(endpoint.batch.submit_service_job, **_submit_params(**extra)) == message


def test_quota_share_name_is_required_on_a_quota_queue(endpoint: Endpoint) -> None:
    params = _submit_params()
    del params["quotaShareName"]
    assert _refused(endpoint.batch.submit_service_job, **params) == (
        "job queue ml-training uses quota shares: quotaShareName is required"
    )


def test_a_disabled_queue_accepts_no_jobs(endpoint: Endpoint) -> None:
    endpoint.batch.update_job_queue(jobQueue=QUEUE, state="DISABLED")
    assert _refused(endpoint.batch.submit_service_job, **_submit_params()) == (
        "job queue ml-training is DISABLED and accepts no new jobs"
    )


def test_list_filters_and_pages(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    ids = [submit(batch, "nlp", 1, name=f"train-{i}") for i in range(5)]
    others = [submit(batch, "vision", 1, name="Eval")]
    endpoint.advance(1)  # 4 of the 6 start: train-2 borrows vision's idle p4d
    listed = batch.list_service_jobs(jobQueue=QUEUE, jobStatus="SCHEDULED")["jobSummaryList"]
    assert [j["jobName"] for j in listed] == ["Eval", "train-2", "train-1", "train-0"]
    assert "RUNNING" not in {j["status"] for j in listed}
    assert batch.list_service_jobs(jobQueue=QUEUE)["jobSummaryList"] == []  # RUNNING by default

    def names(**params: Any) -> list[str]:
        found = batch.list_service_jobs(jobQueue=QUEUE, **params)["jobSummaryList"]
        return [j["jobName"] for j in found]

    assert names(filters=[{"name": "JOB_NAME", "values": ["TRAIN*"]}]) == [
        f"train-{i}" for i in reversed(range(5))
    ]
    assert names(filters=[{"name": "JOB_NAME", "values": ["eval"]}]) == ["Eval"]
    assert names(filters=[{"name": "QUOTA_SHARE_NAME", "values": ["vision"]}]) == ["Eval"]
    assert names(
        jobStatus="RUNNABLE", filters=[{"name": "QUOTA_SHARE_NAME", "values": ["nlp"]}]
    ) == ["train-4", "train-3"]
    endpoint.advance(10)
    late = submit(batch, "vision", 1, name="late")
    created = batch.describe_service_job(jobId=late)["createdAt"]
    assert names(filters=[{"name": "AFTER_CREATED_AT", "values": [str(created - 1)]}]) == ["late"]
    assert len(names(filters=[{"name": "BEFORE_CREATED_AT", "values": [str(created)]}])) == 6

    paginator = batch.get_paginator("list_service_jobs")
    pages = paginator.paginate(
        jobQueue=QUEUE,
        filters=[{"name": "JOB_NAME", "values": ["train*"]}],
        PaginationConfig={"PageSize": 2},
    )
    sizes = [len(page["jobSummaryList"]) for page in pages]
    assert sizes == [2, 2, 1]
    assert len(ids + others) == 6
    assert _refused(batch.list_service_jobs, jobQueue=QUEUE, nextToken="garbage!") == (
        "invalid nextToken 'garbage!'"
    )
    assert _refused(batch.list_service_jobs, jobQueue=QUEUE, maxResults=101) == (
        "maxResults must be between 1 and 100, got 101"
    )


def test_update_priority_reorders_a_share(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    blocker = submit(batch, "nlp", 4, duration=100)
    endpoint.advance(1)
    first = submit(batch, "nlp", 4, name="first")
    second = submit(batch, "nlp", 4, name="second")
    endpoint.advance(1)
    updated = batch.update_service_job(jobId=second, schedulingPriority=50)
    assert updated["jobId"] == second
    endpoint.advance(4 + 2 + 100 + 2)  # the blocker finishes
    assert status(batch, blocker) == "SUCCEEDED"
    assert (status(batch, second), status(batch, first)) == ("SCHEDULED", "RUNNABLE")
    reason = batch.describe_service_job(jobId=first)["statusReason"]
    # nlp borrows without limit: the queue's whole capacity, not a borrow limit, stops it
    assert reason.startswith(f"QUEUE_CAPACITY_IN_USE: nlp needs 4 {P4D}; it uses 4 of 2 and ")
    assert reason.endswith(f"has 4 {P4D} in all, 0 free; nlp holds 4"), reason
    assert _refused(batch.update_service_job, jobId=blocker, schedulingPriority=1) == (
        f"job {blocker} is SUCCEEDED; its priority can no longer change"
    )


def test_terminate_a_waiting_and_a_running_job(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    running = submit(batch, "nlp", 4)
    endpoint.advance(1)
    waiting = submit(batch, "nlp", 1)
    endpoint.advance(1)
    batch.terminate_service_job(jobId=waiting, reason="not needed")
    described = batch.describe_service_job(jobId=waiting)
    assert (described["status"], described["statusReason"], described["isTerminated"]) == (
        "FAILED",
        "not needed",
        True,
    )
    batch.terminate_service_job(jobId=running, reason="cancelled by user")
    assert status(batch, running) == "SCHEDULED"  # until its training job has stopped
    endpoint.advance(2)
    described = batch.describe_service_job(jobId=running)
    assert (described["status"], described["statusReason"]) == ("FAILED", "cancelled by user")
    assert described["attempts"][0]["statusReason"] == "cancelled by user"
    training = described["attempts"][0]["serviceResourceId"]["value"].rsplit("/", 1)[1]
    summaries = endpoint.sagemaker.list_training_jobs(NameContains=training)
    assert summaries["TrainingJobSummaries"][0]["TrainingJobStatus"] == "Stopped"
    assert _refused(batch.terminate_service_job, jobId="nope", reason="x") == (
        "service job nope does not exist"
    )


def test_concurrent_submissions_are_all_accounted_for(endpoint: Endpoint) -> None:
    """The server is threaded; one lock keeps every submission and clientToken exact."""

    def submit_many(worker: int) -> list[str]:
        batch = endpoint.client("batch")
        ids = []
        for index in range(10):
            params = _submit_params(jobName=f"w{worker}-{index}", clientToken=f"t{index}-{worker}")
            ids.append(batch.submit_service_job(**params)["jobId"])
            # Retrying with the same token, as a client does after a timeout, adds nothing.
            assert batch.submit_service_job(**params)["jobId"] == ids[-1]
        return ids

    with ThreadPoolExecutor(max_workers=4) as pool:
        ids = [job for jobs in pool.map(submit_many, range(4)) for job in jobs]
    assert len(set(ids)) == 40
    pages = endpoint.batch.get_paginator("list_service_jobs").paginate(
        jobQueue=QUEUE, jobStatus="SUBMITTED"
    )
    listed = [job["jobId"] for page in pages for job in page["jobSummaryList"]]
    assert sorted(listed) == sorted(ids)
