"""The AWS CLI as a second real client: ``aws batch ... --endpoint-url``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.emulator.conftest import QUEUE, Endpoint, training_payload

# The CLI installed next to this interpreter (the test extra's awscli), else one on PATH.
AWS = shutil.which("aws", path=str(Path(sys.executable).parent)) or shutil.which("aws")
pytestmark = pytest.mark.skipif(AWS is None, reason="the AWS CLI (awscli) is not installed")


def _aws(endpoint: Endpoint, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    assert AWS is not None
    command = [AWS, *args, "--endpoint-url", endpoint.url, "--output", "json"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_submit_and_describe_with_the_cli(endpoint: Endpoint) -> None:
    submitted = _aws(
        endpoint,
        "batch",
        "submit-service-job",
        "--job-name",
        "from-cli",
        "--job-queue",
        QUEUE,
        "--quota-share-name",
        "nlp",
        "--service-job-type",
        "SAGEMAKER_TRAINING",
        "--service-request-payload",
        json.dumps(training_payload(2)),
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["jobId"]
    endpoint.advance(1)
    described = _aws(endpoint, "batch", "describe-service-job", "--job-id", job_id)
    assert json.loads(described.stdout)["status"] == "SCHEDULED"
    shares = _aws(endpoint, "batch", "list-quota-shares", "--job-queue", QUEUE)
    assert [s["quotaShareName"] for s in json.loads(shares.stdout)["quotaShares"]] == [
        "nlp",
        "vision",
    ]


def test_cli_errors_carry_the_code(endpoint: Endpoint) -> None:
    failed = _aws(endpoint, "batch", "describe-service-job", "--job-id", "nope")
    assert failed.returncode != 0
    assert "(ClientException) when calling the DescribeServiceJob operation: " in failed.stderr
    assert "service job nope does not exist" in failed.stderr
    failed = _aws(endpoint, "sagemaker", "describe-training-job", "--training-job-name", "nope")
    assert "(ValidationException)" in failed.stderr
