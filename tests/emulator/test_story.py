"""The AWS story end to end, read back through every API a client would use.

vision borrows nlp's idle capacity; nlp submits; vision's job is preempted
(cross-share reclaim), requeued, resumes from its checkpoint once nlp's job
is done, and succeeds. Time is moved by the clock endpoint, never slept.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.emulator.conftest import (
    G5,
    P4D,
    QUEUE,
    TWO_SHARES,
    Endpoint,
    make_client,
    serve,
    status,
    submit,
    training_payload,
)

RECLAIM = "Cross-share preemption triggered to reclaim borrowed capacity"
CHECKPOINT = "s3://bucket/checkpoints/vision-pretrain"


def _listed(endpoint: Endpoint, job_status: str) -> list[str]:
    jobs = endpoint.batch.list_service_jobs(jobQueue=QUEUE, jobStatus=job_status)
    return [job["jobName"] for job in jobs["jobSummaryList"]]


def _training(endpoint: Endpoint, job_id: str, attempt: int) -> dict[str, Any]:
    job = endpoint.batch.describe_service_job(jobId=job_id)
    arn = job["attempts"][attempt]["serviceResourceId"]["value"]
    name = arn.rsplit("/", 1)[1]
    training = endpoint.sagemaker.list_training_jobs(NameContains=name)["TrainingJobSummaries"]
    described: dict[str, Any] = endpoint.sagemaker.describe_training_job(
        TrainingJobName=training[0]["TrainingJobName"]
    )
    return described


def _submit_borrower(endpoint: Endpoint) -> str:
    payload = training_payload(4, CheckpointConfig={"S3Uri": CHECKPOINT})
    return submit(
        endpoint.batch,
        "vision",
        name="vision-pretrain",
        duration=3600,
        payload=payload,
        tags={"emulator:checkpoint-interval-seconds": "600"},
    )


def test_the_borrower_is_preempted_requeued_and_resumes_from_its_checkpoint(
    endpoint: Endpoint,
) -> None:
    batch = endpoint.batch
    vision = _submit_borrower(endpoint)
    assert status(batch, vision) == "SUBMITTED"
    endpoint.advance(1)  # enters the queue, borrows nlp's idle 2 p4d at once
    assert status(batch, vision) == "SCHEDULED"
    endpoint.advance(6)  # Starting (4 s), Downloading (2 s)
    assert status(batch, vision) == "RUNNING"
    usage = batch.get_job_queue_snapshot(jobQueue=QUEUE)["queueUtilization"]
    assert {
        u["quotaShareName"]: u["capacityUsage"]
        for u in usage["quotaShareUtilization"]["topCapacityUtilization"]
    } == {
        "nlp": [{"capacityUnit": P4D, "quantity": 0.0}],
        "vision": [{"capacityUnit": G5, "quantity": 0.0}, {"capacityUnit": P4D, "quantity": 4.0}],
    }

    endpoint.advance(1300)  # 1300 s of training: the checkpoint at 1200 s is saved
    nlp = submit(batch, "nlp", 2, name="nlp-finetune", duration=600)
    endpoint.advance(1)  # nlp's job enters the queue and reclaims its capacity
    described = batch.describe_service_job(jobId=vision)
    assert described["status"] == "RUNNING"
    assert described["statusReason"] == f"PREEMPTION_IN_PROGRESS: {RECLAIM}"
    waiting = batch.describe_service_job(jobId=nlp)
    assert waiting["status"] == "RUNNABLE"
    assert waiting["statusReason"].startswith("PREEMPTION_IN_PROGRESS: nlp waits")
    first = _training(endpoint, vision, 0)
    assert (first["TrainingJobStatus"], first["SecondaryStatus"]) == ("Stopping", "Stopping")

    endpoint.advance(2)  # the training job has stopped: vision requeued, nlp starts
    described = batch.describe_service_job(jobId=vision)
    assert described["status"] == "RUNNABLE"
    assert described["statusReason"].startswith("NO_IDLE_CAPACITY: vision needs 4")
    summary = described["preemptionSummary"]
    assert summary["preemptedAttemptCount"] == 1
    preempted = summary["recentPreemptedAttempts"][0]
    assert preempted["statusReason"].startswith(f"{RECLAIM}: share vision borrows 2 {P4D}")
    assert preempted["serviceResourceId"] == described["attempts"][0]["serviceResourceId"]
    assert preempted["stoppedAt"] - preempted["startedAt"] == 1309 * 1000  # t=1 to t=1310
    assert status(batch, nlp) == "SCHEDULED"
    assert _listed(endpoint, "RUNNABLE") == ["vision-pretrain"]
    assert _listed(endpoint, "SCHEDULED") == ["nlp-finetune"]
    snapshot = batch.get_job_queue_snapshot(jobQueue=QUEUE)
    assert [j["jobArn"] for j in snapshot["frontOfQueue"]["jobs"]] == [described["jobArn"]]
    assert list(snapshot["frontOfQuotaShares"]["quotaShares"]) == ["vision"]
    assert _training(endpoint, vision, 0)["TrainingJobStatus"] == "Stopped"

    endpoint.advance(4 + 2 + 600 + 2)  # nlp's job runs to completion; vision starts again
    assert status(batch, nlp) == "SUCCEEDED"
    assert status(batch, vision) == "SCHEDULED"
    endpoint.advance(6)
    second = _training(endpoint, vision, 1)
    assert second["SecondaryStatus"] == "Training"
    assert second["SecondaryStatusTransitions"][-1]["StatusMessage"].endswith(
        f"Resumed from the checkpoint at {CHECKPOINT} with 1200 of 3600 seconds of work done."
    )
    assert second["CheckpointConfig"] == {"S3Uri": CHECKPOINT}

    endpoint.advance(2400 + 2)  # the remaining 2400 s of work, then Uploading
    described = batch.describe_service_job(jobId=vision)
    assert described["status"] == "SUCCEEDED"
    assert described["statusReason"] == "Received status from SageMaker: Training job completed"
    assert len(described["attempts"]) == 2
    assert described["attempts"][1]["statusReason"] == described["statusReason"]
    done = _training(endpoint, vision, 1)
    assert (done["TrainingJobStatus"], done["TrainingTimeInSeconds"]) == ("Completed", 2400)
    assert _listed(endpoint, "SUCCEEDED") == ["nlp-finetune", "vision-pretrain"]  # newest first
    statuses = [
        t["TrainingJobStatus"]
        for t in endpoint.sagemaker.list_training_jobs()["TrainingJobSummaries"]
    ]
    assert statuses == ["Stopped", "Completed", "Completed"]


def test_a_job_out_of_preemption_retries_fails(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    vision = submit(
        batch,
        "vision",
        4,
        duration=3600,
        preemptionConfiguration={"preemptionRetriesBeforeTermination": 0},
    )
    endpoint.advance(10)
    submit(batch, "nlp", 2)
    endpoint.advance(1 + 2)
    described = batch.describe_service_job(jobId=vision)
    assert described["status"] == "FAILED"
    assert described["statusReason"] == (
        "PREEMPTION_RETRIES_EXHAUSTED: preempted 1 times; preemptionRetriesBeforeTermination is 0"
    )
    assert described["preemptionSummary"]["preemptedAttemptCount"] == 1


def test_with_an_accelerated_clock_jobs_finish_on_their_own() -> None:
    """At 3600x an hour of training takes a second of real time: no clock endpoint needed."""
    for endpoint in serve(TWO_SHARES, time_scale=3600):
        batch = make_client(endpoint.url, "batch")
        job = submit(batch, "nlp", 2, duration=3600)
        deadline = time.monotonic() + 30
        while status(batch, job) != "SUCCEEDED":
            assert time.monotonic() < deadline, batch.describe_service_job(jobId=job)
            time.sleep(0.05)
        described = batch.describe_service_job(jobId=job)
        # Emulated, not real, time: more than the hour of training passed.
        assert described["stoppedAt"] - described["startedAt"] >= 3600 * 1000
        assert (
            json.loads(described["serviceRequestPayload"])["ResourceConfig"]["InstanceCount"] == 2
        )
