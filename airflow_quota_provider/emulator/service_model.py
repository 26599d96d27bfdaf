"""botocore's service models, the authority on operations, paths and fields.

The emulator reads the models installed with botocore, so a request is judged
by the same definitions the client serialised it from.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import botocore.session
from botocore.model import OperationModel, ServiceModel

BATCH = "batch"
SAGEMAKER = "sagemaker"
SERVICES = (BATCH, SAGEMAKER)


@functools.cache
def service_model(service: str) -> ServiceModel:
    session = botocore.session.get_session()
    return session.get_service_model(service)


@dataclass(frozen=True)
class Route:
    """One rest-json operation: its HTTP method and a regex for its path."""

    method: str
    pattern: re.Pattern[str]
    operation: OperationModel


def _path_pattern(request_uri: str) -> re.Pattern[str]:
    path = request_uri.split("?", 1)[0]
    parts = re.split(r"(\{[^}]+\})", path)
    regex = ""
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            greedy = name.endswith("+")
            name = name.rstrip("+")
            regex += f"(?P<{name}>.+)" if greedy else f"(?P<{name}>[^/]+)"
        else:
            regex += re.escape(part)
    return re.compile(f"^{regex}/?$")


@functools.cache
def batch_routes() -> tuple[Route, ...]:
    model = service_model(BATCH)
    routes = []
    for name in model.operation_names:
        operation = model.operation_model(name)
        http = operation.http
        routes.append(Route(http["method"], _path_pattern(http["requestUri"]), operation))
    return tuple(routes)


def find_batch_route(method: str, path: str) -> tuple[OperationModel, dict[str, str]] | None:
    """The Batch operation a request's method and path name, with its URI parameters."""
    for route in batch_routes():
        if route.method != method:
            continue
        match = route.pattern.match(path)
        if match:
            return route.operation, match.groupdict()
    return None


def sagemaker_operation(target: str) -> OperationModel | None:
    """The SageMaker operation named by an ``X-Amz-Target`` (``SageMaker.CreateTrainingJob``)."""
    model = service_model(SAGEMAKER)
    prefix = f"{model.metadata['targetPrefix']}."
    if not target.startswith(prefix):
        return None
    name = target[len(prefix) :]
    if name not in model.operation_names:
        return None
    return model.operation_model(name)
