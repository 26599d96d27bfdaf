"""An AWS call that failed, in one shape wherever the provider calls AWS.

::

    QuotaError
    └── AwsCallFailed       an AWS call failed: .operation, .code, .message

:func:`aws_call` turns botocore's errors into :class:`AwsCallFailed` (or a subclass
the caller names), so ``airflow-quota plan``/``apply``, the GPU Quotas view, ``trace
export`` and the reconciler say a failed call the same way:
``DescribeJobQueues failed (EndpointConnectionError): Could not connect ...``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from airflow_quota_provider.exceptions import QuotaError


class AwsCallFailed(QuotaError):
    """An AWS call failed; ``message`` is AWS's (or botocore's) own words.

    :param operation: the call (``ListServiceJobs``), or what was being done with it.
    :param code: the AWS error code (``ClientException``), or botocore's error
        class name when no response came (``EndpointConnectionError``).
    """

    def __init__(self, operation: str, code: str, message: str) -> None:
        self.operation = operation
        self.code = code
        self.message = message
        super().__init__(f"{operation} failed ({code}): {message}")


@contextmanager
def aws_call(operation: str, failure: type[AwsCallFailed] = AwsCallFailed) -> Iterator[None]:
    """Turn botocore's errors inside the block into ``failure`` (:class:`AwsCallFailed`
    or a subclass of it) for ``operation``."""
    try:
        yield
    except ClientError as error:
        details = error.response.get("Error", {})
        code = str(details.get("Code") or "Unknown")
        message = str(details.get("Message") or error)
        raise failure(operation, code, message) from error
    except BotoCoreError as error:
        raise failure(operation, type(error).__name__, str(error)) from error
