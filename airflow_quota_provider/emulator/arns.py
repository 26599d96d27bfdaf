"""ARNs and ids that look like AWS's, in one emulated account and region."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"

_SERVICE_JOB_ARN = re.compile(
    r"arn:(?P<partition>[a-z-]+):batch:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"service-job/(?P<id>[A-Za-z0-9_-]+)"
)


@dataclass(frozen=True)
class Arns:
    region: str = REGION
    account: str = ACCOUNT

    def batch(self, kind: str, name: str) -> str:
        return f"arn:{PARTITION}:batch:{self.region}:{self.account}:{kind}/{name}"

    def quota_share(self, queue: str, name: str) -> str:
        # AWS does not document the format; a share's name is unique within its queue.
        return self.batch("job-queue", f"{queue}/quota-share/{name}")

    def service_job(self, job_id: str) -> str:
        return self.batch("service-job", job_id)

    def service_job_id(self, reference: str) -> str | None:
        """The job id a ``jobId`` names: itself, or the id in a service job's ARN.

        ``None`` for a service job ARN of another partition, account or region,
        which names no job here. Raises :class:`ValueError` for any other ARN.
        """
        if not reference.startswith("arn:"):
            return reference
        match = _SERVICE_JOB_ARN.fullmatch(reference)
        if match is None:
            raise ValueError(
                f"{reference} is not a service job ARN; expected {self.service_job('<job id>')}"
            )
        here = (match["partition"], match["region"], match["account"]) == (
            PARTITION,
            self.region,
            self.account,
        )
        return match["id"] if here else None

    def training_job(self, name: str) -> str:
        # SageMaker lowercases names in ARNs.
        return f"arn:{PARTITION}:sagemaker:{self.region}:{self.account}:training-job/{name.lower()}"


def new_id() -> str:
    return str(uuid.uuid4())


_NOT_NAME = re.compile(r"[^a-zA-Z0-9-]+")


def batch_training_job_name(base: str) -> str:
    """A training job's name for one attempt: ``AWSBatch<name><32 hex>``, as Batch names them."""
    suffix = uuid.uuid4().hex
    cleaned = _NOT_NAME.sub("-", base).strip("-") or "job"
    room = 63 - len("AWSBatch") - len(suffix)
    return f"AWSBatch{cleaned[:room].rstrip('-')}{suffix}"
