"""The emulated account behind the HTTP server: validate, handle, shape, count.

One lock serialises every request: the emulator's state is small and its
operations are fast, and a single order of events keeps it exactly
reproducible. Before and after each operation the world catches up with the
clock, so timers due by then have fired at their own timestamps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from airflow_quota_provider.emulator import (
    environments,
    job_listing,
    job_queues,
    quota_shares,
    scheduling_policies,
    service_jobs,
    snapshot,
    tags,
    training_jobs,
)
from airflow_quota_provider.emulator.arns import ACCOUNT, REGION, Arns
from airflow_quota_provider.emulator.clock import EmulatedClock
from airflow_quota_provider.emulator.errors import (
    ApiError,
    BatchServerError,
    NotImplementedByEmulator,
    invalid_input,
)
from airflow_quota_provider.emulator.protocol import (
    HttpResponse,
    failure,
    parse_request,
    service_of,
    success,
)
from airflow_quota_provider.emulator.registry import Handler
from airflow_quota_provider.emulator.service_model import BATCH, SAGEMAKER, service_model
from airflow_quota_provider.emulator.shaping import shape_output
from airflow_quota_provider.emulator.stats import Stats
from airflow_quota_provider.emulator.validation import problems_of, validation_message
from airflow_quota_provider.emulator.world import World

log = logging.getLogger(__name__)

HANDLERS: dict[str, dict[str, Handler]] = {
    BATCH: {
        **environments.HANDLERS,
        **scheduling_policies.HANDLERS,
        **job_queues.HANDLERS,
        **quota_shares.HANDLERS,
        **service_jobs.HANDLERS,
        **job_listing.HANDLERS,
        **snapshot.HANDLERS,
        **tags.HANDLERS,
    },
    SAGEMAKER: training_jobs.HANDLERS,
}


@dataclass(frozen=True)
class EmulatorOptions:
    """:param time_scale: emulated seconds per real second; 0 stops the clock.
    :param instance_limits: instances per type direct CreateTrainingJob calls may hold.
    """

    time_scale: float = 1.0
    region: str = REGION
    account: str = ACCOUNT
    instance_limits: Mapping[str, int] = field(default_factory=dict)
    start: float | None = None


class Emulator:
    def __init__(self, options: EmulatorOptions | None = None) -> None:
        self.options = options or EmulatorOptions()
        self.clock = EmulatedClock(self.options.time_scale, start=self.options.start)
        arns = Arns(self.options.region, self.options.account)
        self.world = World(self.clock, arns, self.options.instance_limits)
        self.stats = Stats()
        self.lock = threading.RLock()

    def call(self, service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run one operation as if it came over HTTP; raises :class:`ApiError`."""
        handlers = HANDLERS[service]
        handler = handlers.get(operation)
        if handler is None:
            raise NotImplementedByEmulator(f"{operation} is not implemented by this emulator")
        model = service_model(service).operation_model(operation)
        if model.input_shape is not None:
            problems = problems_of(model.input_shape, params)
            if problems:
                raise invalid_input(service, validation_message(problems))
        with self.lock:
            self.world.catch_up()
            result = handler(self.world, params)
            self.world.catch_up()
            return shape_output(model.output_shape, result)

    def handle_http(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> HttpResponse:
        """Answer one HTTP request, successful or not, and count it."""
        service, name = BATCH, "unknown"
        try:
            service = service_of(method, urlsplit(target).path, headers)
            request = parse_request(method, target, headers, body)
            service, name = request.service, request.operation.name
            response = success(service, self.call(service, name, request.params))
            self.stats.record(f"{service}.{name}", "ok")
            return response
        except ApiError as error:
            self.stats.record(f"{service}.{name}", error.code)
            return failure(service, error)
        except Exception:
            log.exception("emulator failure in %s.%s", service, name)
            internal = _internal_error(service)
            self.stats.record(f"{service}.{name}", internal.code)
            return failure(service, internal)

    def advance(self, seconds: float) -> float:
        """Move emulated time forward and let everything due by then happen."""
        with self.lock:
            self.clock.advance(seconds)
            self.world.catch_up()
            return self.world.now


def _internal_error(service: str) -> ApiError:
    # SageMaker's generic 500 is InternalFailure, which is ApiError's own code.
    message = "the emulator failed; see its log"
    return ApiError(message) if service == SAGEMAKER else BatchServerError(message)
