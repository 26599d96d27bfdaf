"""The emulated account behind the HTTP server: validate, handle, shape, count.

One lock serialises every request: the emulator's state is small and its
operations are fast, and a single order of events keeps it exactly
reproducible. Before and after each operation the world catches up with the
clock, so timers due by then have fired at their own timestamps.

With ``state`` (``--state FILE``) the world is loaded from that file at start
and saved to it after every request that may have changed it, still inside
the lock (:mod:`.state_file`); a save encodes only the records reached since
the last, and a request that changed nothing (a read that fired no timer)
leaves nothing for the next. Faults (:mod:`.faults`) strike a request
before its operation runs, so a refused request changes nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# each module itself, not through the package: the package's __init__ imports this module
import airflow_quota_provider.emulator.environments as environments
import airflow_quota_provider.emulator.job_listing as job_listing
import airflow_quota_provider.emulator.job_queues as job_queues
import airflow_quota_provider.emulator.quota_shares as quota_shares
import airflow_quota_provider.emulator.scheduling_policies as scheduling_policies
import airflow_quota_provider.emulator.service_jobs as service_jobs
import airflow_quota_provider.emulator.snapshot as snapshot
import airflow_quota_provider.emulator.tags as tags
import airflow_quota_provider.emulator.training_jobs as training_jobs
from airflow_quota_provider.aws_batch.request_shape import problems_of, validation_message
from airflow_quota_provider.emulator.arns import ACCOUNT, REGION, Arns
from airflow_quota_provider.emulator.clock import EmulatedClock
from airflow_quota_provider.emulator.errors import (
    ApiError,
    BatchServerError,
    NotImplementedByEmulator,
    invalid_input,
)
from airflow_quota_provider.emulator.faults import FaultOptions, Faults
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
from airflow_quota_provider.emulator.state_file import StateFile
from airflow_quota_provider.emulator.stats import Stats
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
    state: str | Path | None = None
    faults: FaultOptions = field(default_factory=FaultOptions)


READ_ONLY_PREFIXES = ("Describe", "List", "Get")
"""Operations that change nothing, so need no save unless a timer fired meanwhile."""


class Emulator:
    """:ivar restored: the state file held an account, which is now loaded."""

    def __init__(self, options: EmulatorOptions | None = None) -> None:
        self.options = options or EmulatorOptions()
        self.state_file = StateFile(self.options.state) if self.options.state else None
        saved = self.state_file.saved_clock() if self.state_file else None
        start = self.options.start if saved is None else saved
        self.clock = EmulatedClock(self.options.time_scale, start=start)
        arns = Arns(self.options.region, self.options.account)
        faults = Faults(self.options.faults)
        self.faults = faults
        self.world = World(self.clock, arns, self.options.instance_limits, faults)
        self.stats = Stats()
        self.lock = threading.RLock()
        self.restored = self.state_file.load(self.world) if self.state_file else False
        self._fired_at_save = self.world.fired
        if self.restored:
            self.save()

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
            try:
                self.world.catch_up()
                result = handler(self.world, params)
                self.world.catch_up()
                return shape_output(model.output_shape, result)
            finally:
                if not operation.startswith(READ_ONLY_PREFIXES) or self._timers_fired():
                    self.save()
                else:
                    # It changed nothing: the records it read need no encoding at the next save.
                    self.world.drain_reached()

    def handle_http(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> HttpResponse:
        """Answer one HTTP request, successful or not, and count it."""
        service, name = BATCH, "unknown"
        try:
            service = service_of(method, urlsplit(target).path, headers)
            request = parse_request(method, target, headers, body)
            service, name = request.service, request.operation.name
            self.faults.delay()
            refusal = self.faults.refusal(service)
            if refusal is not None:
                raise refusal
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
            self.save()
            return self.world.now

    def set_time_scale(self, time_scale: float) -> float:
        """Let emulated time run at ``time_scale`` from now on (0 pauses it)."""
        with self.lock:
            self.world.catch_up()
            self.clock.set_time_scale(time_scale)
            return self.world.now

    def now(self) -> float:
        """The emulated time, everything due by then having happened."""
        with self.lock:
            self.world.catch_up()
            if self._timers_fired():
                self.save()
            return self.world.now

    def _timers_fired(self) -> bool:
        return self.world.fired != self._fired_at_save

    def save(self) -> None:
        """Write the state to the ``--state`` file, if there is one (no-op otherwise)."""
        with self.lock:
            self._fired_at_save = self.world.fired
            if self.state_file is not None:
                self.state_file.save(self.world)
            else:
                self.world.drain_reached()

    def close(self) -> None:
        """Save the state as of now and close the state file; the emulator is done."""
        with self.lock:
            if self.state_file is None:
                return
            self.world.catch_up()
            self.save()
            self.state_file.close()
            self.state_file = None


def _internal_error(service: str) -> ApiError:
    # SageMaker's generic 500 is InternalFailure, which is ApiError's own code.
    message = "the emulator failed; see its log"
    return ApiError(message) if service == SAGEMAKER else BatchServerError(message)
