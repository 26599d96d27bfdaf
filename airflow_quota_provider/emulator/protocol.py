"""The two wire protocols: Batch's rest-json and SageMaker's json 1.1.

A request is routed by the service name its signature was made for
(``Credential=AKID/20260101/us-east-1/batch/aws4_request``); unsigned
requests (``aws --no-sign-request``) fall back on their shape: an
``X-Amz-Target`` header means SageMaker, a ``/v1/`` path means Batch.
Signatures are not checked: any dummy credentials work.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.model import OperationModel

from airflow_quota_provider.emulator.errors import (
    ApiError,
    UnknownOperation,
    invalid_input,
)
from airflow_quota_provider.emulator.service_model import (
    BATCH,
    SAGEMAKER,
    find_batch_route,
    sagemaker_operation,
)

_CREDENTIAL = re.compile(r"Credential=[^/,\s]+/[^/,\s]+/([^/,\s]+)/([^/,\s]+)/aws4_request")
_JSON_11 = "application/x-amz-json-1.1"


@dataclass(frozen=True)
class ApiRequest:
    service: str
    operation: OperationModel
    params: dict[str, Any]
    region: str | None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def signing_scope(headers: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(region, service)`` of a SigV4 ``Authorization`` header, if there is one."""
    match = _CREDENTIAL.search(headers.get("Authorization", ""))
    if match is None:
        return None, None
    return match.group(1), match.group(2)


def service_of(method: str, path: str, headers: Mapping[str, str]) -> str:
    _, signed_for = signing_scope(headers)
    if signed_for in (BATCH, SAGEMAKER):
        return signed_for
    if signed_for is not None:
        raise UnknownOperation(f"this endpoint serves batch and sagemaker, not {signed_for}")
    if headers.get("X-Amz-Target"):
        return SAGEMAKER
    if path.startswith("/v1/"):
        return BATCH
    raise UnknownOperation(f"no AWS operation at {method} {path}")


def parse_request(method: str, target: str, headers: Mapping[str, str], body: bytes) -> ApiRequest:
    """The operation and parameters of one HTTP request; raises :class:`ApiError`."""
    url = urlsplit(target)
    service = service_of(method, url.path, headers)
    region, _ = signing_scope(headers)
    data = _json_body(service, body)
    if service == SAGEMAKER:
        operation = sagemaker_operation(headers.get("X-Amz-Target", ""))
        if operation is None:
            name = headers.get("X-Amz-Target", "")
            raise invalid_input(SAGEMAKER, f"unknown operation {name!r}")
        return ApiRequest(SAGEMAKER, operation, data, region)
    found = find_batch_route(method, url.path)
    if found is None:
        raise UnknownOperation(f"Batch has no operation at {method} {url.path}")
    operation, uri_params = found
    params = _rest_params(operation, data, uri_params, parse_qs(url.query))
    return ApiRequest(BATCH, operation, params, region)


def _json_body(service: str, body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise invalid_input(service, f"the request body is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise invalid_input(service, "the request body must be a JSON object")
    return data


def _rest_params(
    operation: OperationModel,
    body: dict[str, Any],
    uri: Mapping[str, str],
    query: Mapping[str, list[str]],
) -> dict[str, Any]:
    """Body members plus the members the model places in the path and the query string."""
    params = dict(body)
    shape = operation.input_shape
    if shape is None:
        return params
    for name, member in shape.members.items():
        location = member.serialization.get("location")
        wire = member.serialization.get("name", name)
        if location == "uri" and wire in uri:
            params[name] = unquote(uri[wire])
        elif location == "querystring" and wire in query:
            values = query[wire]
            params[name] = values if member.type_name == "list" else values[0]
    return params


def success(service: str, data: dict[str, Any]) -> HttpResponse:
    body = json.dumps(data, separators=(",", ":")).encode()
    content_type = _JSON_11 if service == SAGEMAKER else "application/json"
    return HttpResponse(200, _headers(content_type), body)


def failure(service: str, error: ApiError) -> HttpResponse:
    """An error the way the service sends it, so botocore raises ``ClientError`` with its code."""
    if service == SAGEMAKER:
        # Modelled SageMaker errors have a ``Message`` member; the others use ``message``.
        key = "Message" if error.code in ("ResourceNotFound", "ResourceInUse") else "message"
        payload = {"__type": error.code, key: error.message}
        headers = _headers(_JSON_11)
    else:
        payload = {"message": error.message}
        headers = _headers("application/json")
        headers["x-amzn-ErrorType"] = error.code
    body = json.dumps(payload).encode()
    return HttpResponse(error.status, headers, body)


def _headers(content_type: str) -> dict[str, str]:
    return {"Content-Type": content_type, "x-amzn-RequestId": str(uuid.uuid4())}
