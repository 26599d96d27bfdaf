"""Errors of a sync: an AWS call that failed, or an apply refused before it began.

::

    QuotaError
    └── SyncError
        ├── AwsCallFailed       a Batch call failed: .operation, .code, .message
        └── ApplyRefused        blockers, or destructive changes without permission: .reasons
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from airflow_quota_provider.exceptions import QuotaError


class SyncError(QuotaError):
    """Base of the errors of ``airflow-quota plan`` and ``apply``."""


class AwsCallFailed(SyncError):
    """A Batch call failed; ``message`` is AWS's (or botocore's) own words.

    :param code: the AWS error code (``ClientException``), or botocore's error
        class name when no response came (``EndpointConnectionError``).
    """

    def __init__(self, operation: str, code: str, message: str) -> None:
        self.operation = operation
        self.code = code
        self.message = message
        super().__init__(f"{operation} failed ({code}): {message}")


class ApplyRefused(SyncError):
    """Apply changed nothing because of ``reasons`` (blockers or destructive changes)."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("apply refused: " + "; ".join(self.reasons))


@contextmanager
def aws_call(operation: str) -> Iterator[None]:
    """Turn botocore's errors inside the block into :class:`AwsCallFailed` for ``operation``."""
    try:
        yield
    except ClientError as error:
        details = error.response.get("Error", {})
        code = str(details.get("Code") or "Unknown")
        message = str(details.get("Message") or error)
        raise AwsCallFailed(operation, code, message) from error
    except BotoCoreError as error:
        raise AwsCallFailed(operation, type(error).__name__, str(error)) from error
