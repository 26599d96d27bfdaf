"""Errors the emulator answers with, shaped as the real services send them.

::

    ApiError                        an AWS error response: .code, .message, .status
    ├── BatchClientError            Batch ClientException, 400 (bad request, unknown id, bad state)
    ├── BatchServerError            Batch ServerException, 500
    ├── BatchThrottled              Batch TooManyRequestsException, 429 (--throttle-rate)
    ├── SageMakerThrottled          SageMaker ThrottlingException, 400 (--throttle-rate)
    ├── SageMakerValidationError    SageMaker ValidationException, 400
    ├── ResourceNotFound            SageMaker ResourceNotFound, 400
    ├── ResourceInUse               SageMaker ResourceInUse, 400 (a training job name taken)
    ├── ResourceLimitExceeded       SageMaker ResourceLimitExceeded, 400 (--instance-limit)
    └── UnknownOperation            an operation or path neither service knows, 404 / 400

botocore reads ``code`` from the ``x-amzn-ErrorType`` header (rest-json) or
the ``__type`` member (json 1.1), so a client raises ``ClientError`` with the
same code it would get from AWS.
"""

from __future__ import annotations


class ApiError(Exception):
    """An error response. ``code`` is what ``ClientError.response["Error"]["Code"]`` shows."""

    code = "InternalFailure"
    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BatchClientError(ApiError):
    code = "ClientException"
    status = 400


class BatchServerError(ApiError):
    code = "ServerException"
    status = 500


class BatchThrottled(ApiError):
    """Batch's model declares no throttling error; its service answers 429 with this code,
    which botocore's standard retry mode lists as throttling (legacy mode retries any 429)."""

    code = "TooManyRequestsException"
    status = 429


class SageMakerThrottled(ApiError):
    """Listed as throttling by botocore's standard mode and by ``_retry.json`` (legacy)."""

    code = "ThrottlingException"
    status = 400


class SageMakerValidationError(ApiError):
    code = "ValidationException"
    status = 400


class ResourceNotFound(ApiError):
    code = "ResourceNotFound"
    status = 400


class ResourceInUse(ApiError):
    code = "ResourceInUse"
    status = 400


class ResourceLimitExceeded(ApiError):
    code = "ResourceLimitExceeded"
    status = 400


class UnknownOperation(ApiError):
    code = "UnknownOperationException"
    status = 404


class NotImplementedByEmulator(ApiError):
    """An operation the service model has but this emulator does not implement."""

    code = "NotImplemented"
    status = 501


def invalid_input(service: str, message: str) -> ApiError:
    """The validation error each service answers a malformed request with."""
    if service == "batch":
        return BatchClientError(message)
    return SageMakerValidationError(message)
