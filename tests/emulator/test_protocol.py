"""The wire: routing by signing service, AWS-shaped errors, model validation, control routes."""

from __future__ import annotations

import email.utils
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.emulator.conftest import QUEUE, Endpoint, training_payload


def _raw(
    url: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(url + path, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.load(error)


def _error(call: Callable[..., Any], **params: Any) -> Mapping[str, Any]:
    with pytest.raises(ClientError) as raised:
        call(**params)
    return raised.value.response


def test_routes_by_signing_service(endpoint: Endpoint) -> None:
    assert endpoint.batch.describe_job_queues()["jobQueues"][0]["jobQueueName"] == QUEUE
    assert endpoint.sagemaker.list_training_jobs()["TrainingJobSummaries"] == []


def test_unsigned_requests_are_routed_by_their_shape(endpoint: Endpoint) -> None:
    status, _, body = _raw(endpoint.url, "/v1/describejobqueues", b"{}", {})
    assert status == 200
    assert body["jobQueues"][0]["jobQueueName"] == QUEUE
    headers = {"X-Amz-Target": "SageMaker.ListTrainingJobs"}
    status, headers_back, body = _raw(endpoint.url, "/", b"{}", headers)
    assert (status, body) == (200, {"TrainingJobSummaries": []})
    assert headers_back["Content-Type"] == "application/x-amz-json-1.1"


def test_batch_errors_are_client_exceptions_with_status_400(endpoint: Endpoint) -> None:
    response = _error(endpoint.batch.describe_service_job, jobId="nope")
    assert response["Error"] == {
        "Code": "ClientException",
        "Message": "service job nope does not exist",
    }
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_sagemaker_errors_carry_their_type(endpoint: Endpoint) -> None:
    response = _error(endpoint.sagemaker.describe_training_job, TrainingJobName="nope")
    assert response["Error"]["Code"] == "ValidationException"
    assert response["Error"]["Message"] == "Requested resource not found."
    response = _error(endpoint.sagemaker.stop_training_job, TrainingJobName="nope")
    assert response["Error"]["Code"] == "ResourceNotFound"


def test_enums_and_maximum_lengths_are_checked_by_the_model(endpoint: Endpoint) -> None:
    # botocore checks required members, types and minimums itself; the server checks the rest.
    response = _error(endpoint.batch.list_service_jobs, jobQueue=QUEUE, jobStatus="DONE")
    assert response["Error"]["Message"] == (
        "1 validation error detected: Value 'DONE' at 'jobStatus' failed to satisfy "
        "constraint: Member must satisfy enum value set: [SUBMITTED, PENDING, RUNNABLE, "
        "SCHEDULED, STARTING, RUNNING, SUCCEEDED, FAILED]"
    )
    request = training_payload(TrainingJobName="x" * 64)
    response = _error(endpoint.sagemaker.create_training_job, **request)
    assert response["Error"]["Code"] == "ValidationException"
    assert "Member must have length less than or equal to 63" in response["Error"]["Message"]


def test_required_members_and_types_are_checked_without_client_side_validation(
    endpoint: Endpoint,
) -> None:
    sagemaker = endpoint.client("sagemaker", parameter_validation=False)
    request = training_payload()
    del request["RoleArn"]
    request["ResourceConfig"]["InstanceCount"] = "two"
    response = _error(sagemaker.create_training_job, **request)
    message = response["Error"]["Message"]
    assert message.startswith("2 validation errors detected: ")
    assert (
        "Value null at 'RoleArn' failed to satisfy constraint: Member must not be null" in message
    )
    assert (
        "Value 'two' at 'ResourceConfig.InstanceCount' failed to satisfy constraint: "
        "Member must be an integer" in message
    )


def test_unknown_members_are_refused(endpoint: Endpoint) -> None:
    status, headers, body = _raw(
        endpoint.url, "/v1/describeservicejob", b'{"jobId": "x", "jobID": "y"}', {}
    )
    assert (status, headers["x-amzn-ErrorType"]) == (400, "ClientException")
    assert body["message"] == (
        "1 validation error detected: Unknown member 'jobID'; known members are jobId"
    )


def test_a_body_that_is_not_json_is_refused(endpoint: Endpoint) -> None:
    status, _, body = _raw(endpoint.url, "/v1/describeservicejob", b"{nope", {})
    assert status == 400
    assert body["message"].startswith("the request body is not JSON")


def test_unknown_paths_and_targets(endpoint: Endpoint) -> None:
    status, _, _ = _raw(endpoint.url, "/v1/nothing", b"{}", {})
    assert status == 404
    status, _, body = _raw(endpoint.url, "/", b"{}", {"X-Amz-Target": "SageMaker.Nope"})
    assert (status, body["__type"]) == (400, "ValidationException")


def test_operations_the_emulator_lacks_say_so(endpoint: Endpoint) -> None:
    response = _error(endpoint.batch.describe_compute_environments)
    assert response["Error"]["Code"] == "NotImplemented"
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 501


def test_stats_count_requests_by_operation_and_outcome(endpoint: Endpoint) -> None:
    endpoint.batch.describe_job_queues()
    endpoint.batch.describe_job_queues()
    _error(endpoint.batch.describe_service_job, jobId="nope")
    operations = endpoint.stats()["operations"]
    assert operations["batch.DescribeJobQueues"] == {"ok": 2}
    assert operations["batch.DescribeServiceJob"] == {"ClientException": 1}


def test_the_clock_moves_only_forward(endpoint: Endpoint) -> None:
    before = endpoint.advance(0)["now"]
    assert endpoint.advance(3600)["now"] == pytest.approx(before + 3600)
    request = urllib.request.Request(
        f"{endpoint.url}/_emulator/clock", data=b'{"advance_seconds": -1}', method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    assert raised.value.code == 400


def test_every_answer_is_dated_by_the_emulated_clock(endpoint: Endpoint) -> None:
    now = endpoint.advance(2400)["now"]  # 40 minutes ahead of the wall clock
    for answer in (endpoint.batch.describe_job_queues(), endpoint.sagemaker.list_training_jobs()):
        date = answer["ResponseMetadata"]["HTTPHeaders"]["date"]
        assert email.utils.parsedate_to_datetime(date).timestamp() == int(now), date


def _post_clock(endpoint: Endpoint, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{endpoint.url}/_emulator/clock", data=body, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_clock_can_be_paused_and_run_again(endpoint: Endpoint) -> None:
    status, running = _post_clock(endpoint, b'{"time_scale": 1000}')
    assert (status, running["time_scale"]) == (200, 1000)
    time.sleep(0.05)
    status, paused = _post_clock(endpoint, b'{"time_scale": 0}')
    assert status == 200 and paused["now"] >= running["now"] + 40
    time.sleep(0.05)
    assert endpoint.advance(0)["now"] == paused["now"]  # paused: no time passes
    status, moved = _post_clock(endpoint, b'{"time_scale": 0, "advance_seconds": 60}')
    assert moved["now"] == pytest.approx(paused["now"] + 60)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"time_scale": -2}', "time_scale must be >= 0, got -2"),
        (b'{"time_scale": "fast"}', "could not convert string to float: 'fast'"),
        (b'{"speed": 2}', "unknown fields: speed"),
    ],
    ids=["negative scale", "not a number", "unknown field"],
)
def test_a_bad_clock_change_is_refused_and_changes_nothing(
    endpoint: Endpoint, body: bytes, message: str
) -> None:
    before = endpoint.advance(0)
    status, answer = _post_clock(endpoint, body)
    assert status == 400
    assert answer["message"].startswith('expected {"advance_seconds": <seconds >= 0>, ')
    assert answer["message"].endswith(message)
    assert endpoint.advance(0) == before
