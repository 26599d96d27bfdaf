"""SageMaker Create/Describe/Stop/ListTrainingJobs and the training lifecycle in emulated time."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.emulator.conftest import P4D, Endpoint, serve, training_payload


def _create(
    sagemaker: Any, name: str, instances: int = 1, tags: dict[str, str] | None = None
) -> str:
    request = training_payload(instances, TrainingJobName=name)
    if tags:
        request["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    arn: str = sagemaker.create_training_job(**request)["TrainingJobArn"]
    return arn


def _state(sagemaker: Any, name: str) -> tuple[str, str]:
    job = sagemaker.describe_training_job(TrainingJobName=name)
    return job["TrainingJobStatus"], job["SecondaryStatus"]


def test_lifecycle_of_a_training_job(bare_endpoint: Endpoint) -> None:
    sagemaker = bare_endpoint.sagemaker
    arn = _create(sagemaker, "My-Job", tags={"emulator:duration-seconds": "100"})
    assert arn == "arn:aws:sagemaker:us-east-1:123456789012:training-job/my-job"
    seen = [_state(sagemaker, "My-Job")]
    for seconds in (4, 2, 100, 2):
        bare_endpoint.advance(seconds)
        seen.append(_state(sagemaker, "My-Job"))
    assert seen == [
        ("InProgress", "Starting"),
        ("InProgress", "Downloading"),
        ("InProgress", "Training"),
        ("InProgress", "Uploading"),
        ("Completed", "Completed"),
    ]
    job = sagemaker.describe_training_job(TrainingJobName="My-Job")
    assert job["TrainingTimeInSeconds"] == 100
    assert job["ModelArtifacts"] == {
        "S3ModelArtifacts": "s3://bucket/output/My-Job/output/model.tar.gz"
    }
    assert job["ResourceConfig"] == {"InstanceType": P4D, "InstanceCount": 1, "VolumeSizeInGB": 50}
    transitions = [t["Status"] for t in job["SecondaryStatusTransitions"]]
    assert transitions == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    assert (job["TrainingEndTime"] - job["TrainingStartTime"]).total_seconds() == 100


def test_a_job_fails_after_the_tagged_time(bare_endpoint: Endpoint) -> None:
    sagemaker = bare_endpoint.sagemaker
    _create(sagemaker, "flaky", tags={"emulator:fail-after-seconds": "30"})
    bare_endpoint.advance(4 + 2 + 30)
    job = sagemaker.describe_training_job(TrainingJobName="flaky")
    assert job["TrainingJobStatus"] == "Failed"
    assert job["FailureReason"] == (
        "AlgorithmError: emulated failure after 30 seconds of training "
        "(tag emulator:fail-after-seconds)"
    )


def test_stop_a_job(bare_endpoint: Endpoint) -> None:
    sagemaker = bare_endpoint.sagemaker
    _create(sagemaker, "stop-me")
    sagemaker.stop_training_job(TrainingJobName="stop-me")
    assert _state(sagemaker, "stop-me") == ("Stopping", "Stopping")
    bare_endpoint.advance(2)
    assert _state(sagemaker, "stop-me") == ("Stopped", "Stopped")
    with pytest.raises(ClientError) as raised:
        sagemaker.stop_training_job(TrainingJobName="stop-me")
    assert raised.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "The request was rejected because the training job is in status Stopped.",
    }


def test_names_are_unique(bare_endpoint: Endpoint) -> None:
    _create(bare_endpoint.sagemaker, "taken")
    with pytest.raises(ClientError) as raised:
        _create(bare_endpoint.sagemaker, "taken")
    assert raised.value.response["Error"]["Code"] == "ResourceInUse"


def test_names_ignore_case_as_in_the_arn(bare_endpoint: Endpoint) -> None:
    sagemaker = bare_endpoint.sagemaker
    arn = _create(sagemaker, "Vision-Pretrain")
    assert arn.endswith("/vision-pretrain")
    by_arn_name = sagemaker.describe_training_job(TrainingJobName=arn.rsplit("/", 1)[-1])
    assert by_arn_name["TrainingJobName"] == "Vision-Pretrain"
    with pytest.raises(ClientError) as raised:
        _create(sagemaker, "VISION-PRETRAIN")
    assert raised.value.response["Error"]["Code"] == "ResourceInUse"


def test_instance_limits_bound_direct_creates() -> None:
    for endpoint in serve(None, instance_limits={P4D: 3}):
        _create(endpoint.sagemaker, "a", 2)
        with pytest.raises(ClientError) as raised:
            _create(endpoint.sagemaker, "b", 2)
        assert raised.value.response["Error"] == {
            "Code": "ResourceLimitExceeded",
            "Message": f"The account-level service limit '{P4D} for training job usage' is 3 "
            "Instances, with current utilization of 2 Instances and a request delta of 2 "
            "Instances. Please use AWS Service Quotas to request an increase for this quota.",
        }
        endpoint.advance(4 + 2 + 60 + 2)  # "a" completes and frees its instances
        _create(endpoint.sagemaker, "b", 2)


def test_list_filters_sorts_and_pages(bare_endpoint: Endpoint) -> None:
    sagemaker = bare_endpoint.sagemaker
    for name in ("alpha", "beta", "gamma"):
        _create(sagemaker, name)
        bare_endpoint.advance(1)
    sagemaker.stop_training_job(TrainingJobName="beta")

    def names(**params: Any) -> list[str]:
        found = sagemaker.list_training_jobs(**params)["TrainingJobSummaries"]
        return [job["TrainingJobName"] for job in found]

    assert names() == ["alpha", "beta", "gamma"]
    assert names(SortOrder="Descending") == ["gamma", "beta", "alpha"]
    assert names(StatusEquals="Stopping") == ["beta"]
    assert names(NameContains="MM") == ["gamma"]
    assert names(SortBy="Name", SortOrder="Descending") == ["gamma", "beta", "alpha"]
    pages = sagemaker.get_paginator("list_training_jobs").paginate(PaginationConfig={"PageSize": 2})
    assert [[j["TrainingJobName"] for j in p["TrainingJobSummaries"]] for p in pages] == [
        ["alpha", "beta"],
        ["gamma"],
    ]


def test_a_bad_timing_tag_is_refused(bare_endpoint: Endpoint) -> None:
    with pytest.raises(ClientError) as raised:
        _create(bare_endpoint.sagemaker, "x", tags={"emulator:duration-seconds": "-5"})
    assert raised.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "tag emulator:duration-seconds must be a number of seconds >= 0, got '-5'",
    }


def test_list_tags_of_a_training_job_lists_them_all_and_names_an_unknown_arn(
    bare_endpoint: Endpoint,
) -> None:
    sagemaker = bare_endpoint.sagemaker
    tags = {f"team:{n:02d}": str(n) for n in range(50)}  # SageMaker's most
    arn = _create(sagemaker, "tagged", tags=tags)
    answer = sagemaker.list_tags(ResourceArn=arn, MaxResults=50)
    assert "NextToken" not in answer
    assert {t["Key"]: t["Value"] for t in answer["Tags"]} == tags
    unknown = arn.replace("tagged", "missing")
    with pytest.raises(ClientError, match=f"Requested resource not found: {unknown}"):
        sagemaker.list_tags(ResourceArn=unknown)
