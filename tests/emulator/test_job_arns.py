"""A service job's ARN wherever Batch takes its id, as the SageMaker SDK's helpers pass it.

Every Batch operation the endpoint implements whose input names a service job
(``jobId`` of DescribeServiceJob, UpdateServiceJob and TerminateServiceJob, the
``jobs`` list of TerminateServiceJobs) takes the id or the ARN; an ARN that is
not a service job's, or belongs to another account or region, gets the
ClientException an unknown job gets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.emulator.conftest import TWO_SHARES, Endpoint, make_client, serve, status, submit

FOREIGN_ARNS = (
    "arn:aws:batch:eu-west-1:123456789012:service-job/{id}",
    "arn:aws:batch:us-east-1:210987654321:service-job/{id}",
    "arn:aws-cn:batch:us-east-1:123456789012:service-job/{id}",
)
MALFORMED_ARNS = (
    "arn:aws:batch:us-east-1:123456789012:job-queue/{id}",
    "arn:aws:sagemaker:us-east-1:123456789012:service-job/{id}",
    "arn:aws:batch:us-east-1:123456789012:service-job/",
    "arn:aws:batch:us-east-1",
)


def _refusal(call: Callable[..., Any], **params: Any) -> str:
    with pytest.raises(ClientError) as raised:
        call(**params)
    error = raised.value.response["Error"]
    assert (error["Code"], raised.value.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        "ClientException",
        400,
    )
    message: str = error["Message"]
    return message


def _arn_of(endpoint: Endpoint, job_id: str) -> str:
    arn: str = endpoint.batch.describe_service_job(jobId=job_id)["jobArn"]
    assert arn == f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}"
    return arn


def test_describe_update_and_terminate_take_the_arn(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    blocker = submit(batch, "nlp", 4, duration=100)
    waiting = submit(batch, "nlp", 1, name="waiting")
    endpoint.advance(1)
    arn = _arn_of(endpoint, waiting)
    described = batch.describe_service_job(jobId=arn)
    assert (described["jobId"], described["jobArn"], described["status"]) == (
        waiting,
        arn,
        "RUNNABLE",
    )
    updated = batch.update_service_job(jobId=arn, schedulingPriority=7)
    assert updated == {
        "jobArn": arn,
        "jobId": waiting,
        "jobName": "waiting",
        "ResponseMetadata": updated["ResponseMetadata"],
    }
    assert batch.describe_service_job(jobId=waiting)["schedulingPriority"] == 7
    batch.terminate_service_job(jobId=arn, reason="not needed")
    assert status(batch, waiting) == "FAILED"
    assert status(batch, blocker) == "SCHEDULED"


def test_terminate_many_takes_ids_and_arns(endpoint: Endpoint) -> None:
    batch = endpoint.batch
    by_id = submit(batch, "nlp", 1, name="by-id")
    by_arn = submit(batch, "nlp", 1, name="by-arn")
    arn = _arn_of(endpoint, by_arn)
    foreign = FOREIGN_ARNS[0].format(id=by_arn)
    malformed = MALFORMED_ARNS[0].format(id=by_arn)
    answer = batch.terminate_service_jobs(jobs=[by_id, arn, foreign, malformed], reason="cleanup")
    assert answer["successful"] == [by_id, arn]
    assert answer["errors"] == [
        {
            "job": foreign,
            "code": "ClientException",
            "message": f"service job {foreign} does not exist",
        },
        {
            "job": malformed,
            "code": "ClientException",
            "message": f"jobs: {malformed} is not a service job ARN; expected "
            "arn:aws:batch:us-east-1:123456789012:service-job/<job id>",
        },
    ]
    assert (status(batch, by_id), status(batch, by_arn)) == ("FAILED", "FAILED")


@pytest.mark.parametrize("template", FOREIGN_ARNS)
def test_another_accounts_or_regions_arn_names_no_job_here(
    endpoint: Endpoint, template: str
) -> None:
    batch = endpoint.batch
    job_id = submit(batch, "nlp", 1)
    foreign = template.format(id=job_id)
    expected = f"service job {foreign} does not exist"
    assert _refusal(batch.describe_service_job, jobId=foreign) == expected
    assert _refusal(batch.update_service_job, jobId=foreign, schedulingPriority=1) == expected
    assert _refusal(batch.terminate_service_job, jobId=foreign, reason="x") == expected
    assert status(batch, job_id) == "SUBMITTED"


@pytest.mark.parametrize("template", MALFORMED_ARNS)
def test_an_arn_that_is_not_a_service_jobs_is_refused(endpoint: Endpoint, template: str) -> None:
    batch = endpoint.batch
    job_id = submit(batch, "nlp", 1)
    malformed = template.format(id=job_id)
    expected = (
        f"jobId: {malformed} is not a service job ARN; expected "
        "arn:aws:batch:us-east-1:123456789012:service-job/<job id>"
    )
    assert _refusal(batch.describe_service_job, jobId=malformed) == expected
    assert _refusal(batch.update_service_job, jobId=malformed, schedulingPriority=1) == expected
    assert _refusal(batch.terminate_service_job, jobId=malformed, reason="x") == expected
    assert status(batch, job_id) == "SUBMITTED"


def test_an_unknown_job_id_in_an_arn_of_this_account(endpoint: Endpoint) -> None:
    unknown = "arn:aws:batch:us-east-1:123456789012:service-job/no-such-job"
    assert _refusal(endpoint.batch.describe_service_job, jobId=unknown) == (
        f"service job {unknown} does not exist"
    )


def test_the_region_the_endpoint_serves_is_the_arns_region() -> None:
    served = serve(TWO_SHARES, region="eu-west-1")
    endpoint = next(served)
    try:
        batch = make_client(endpoint.url, "batch")
        job_id = submit(batch, "nlp", 1)
        arn = batch.describe_service_job(jobId=job_id)["jobArn"]
        assert arn == f"arn:aws:batch:eu-west-1:123456789012:service-job/{job_id}"
        assert batch.describe_service_job(jobId=arn)["jobId"] == job_id
        here = f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}"
        assert _refusal(batch.describe_service_job, jobId=here) == (
            f"service job {here} does not exist"
        )
    finally:
        served.close()
