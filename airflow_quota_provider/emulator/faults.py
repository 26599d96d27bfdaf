"""Faults for reliability tests: throttling, server errors, latency, capacity errors.

- ``throttle_rate``: that fraction of AWS requests is answered with the
  service's throttling error (Batch ``TooManyRequestsException`` 429,
  SageMaker ``ThrottlingException`` 400), which botocore retries as throttling;
- ``error_rate``: that fraction with a 500 (Batch ``ServerException``,
  SageMaker ``InternalFailure``), which botocore retries as transient;
- ``latency_ms``: every AWS request is answered that much later; the wait
  holds no lock, so concurrent clients wait side by side;
- ``capacity_error_rate``: that fraction of the training jobs Batch starts
  fails at the end of ``Starting`` with SageMaker's ``CapacityError``, and
  the service job goes from SCHEDULED back to RUNNABLE, keeping its place.

A refused request is refused before it is parsed into an operation's
effects, so it changes nothing: a retried SubmitServiceJob creates one job.
The ``/_emulator/*`` routes are never faulted.

With ``seed`` the draws are reproducible: request faults and capacity errors
come from two generators seeded from it, so the n-th request and the n-th
dispatch meet the same fate in every run (which request is n-th depends on
the clients' order, when they are concurrent).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from airflow_quota_provider.emulator.errors import (
    ApiError,
    BatchServerError,
    BatchThrottled,
    SageMakerThrottled,
)
from airflow_quota_provider.emulator.service_model import SAGEMAKER

CAPACITY_ERROR = (
    "CapacityError: Unable to provision requested ML compute capacity. "
    "Please retry using a different ML instance type."
)
"""SageMaker's FailureReason when it has no instances to start a training job on."""


@dataclass(frozen=True)
class FaultOptions:
    throttle_rate: float = 0.0
    error_rate: float = 0.0
    latency_ms: float = 0.0
    capacity_error_rate: float = 0.0
    seed: int | None = None

    def problems(self) -> list[str]:
        """What is wrong with these options, as the CLI flags name them."""
        found = [
            f"--{flag} must be from 0 to 1, got {rate:g}"
            for flag, rate in (
                ("throttle-rate", self.throttle_rate),
                ("error-rate", self.error_rate),
            )
            if not 0 <= rate <= 1
        ]
        if self.throttle_rate + self.error_rate > 1:
            found.append("--throttle-rate and --error-rate add up to more than 1")
        if not 0 <= self.capacity_error_rate < 1:
            # At 1 no job could ever start: every retry would fail again, forever.
            found.append(
                f"--capacity-error-rate must be from 0 to below 1, got {self.capacity_error_rate:g}"
            )
        if self.latency_ms < 0:
            found.append(f"--latency-ms must be >= 0, got {self.latency_ms:g}")
        return found


class Faults:
    def __init__(self, options: FaultOptions | None = None) -> None:
        self.options = options or FaultOptions()
        problems = self.options.problems()
        if problems:
            raise ValueError("; ".join(problems))
        seed = self.options.seed
        self._requests = random.Random(None if seed is None else f"{seed}:requests")
        self._capacity = random.Random(None if seed is None else f"{seed}:capacity")
        self._lock = threading.Lock()

    def delay(self) -> None:
        if self.options.latency_ms > 0:
            time.sleep(self.options.latency_ms / 1000)

    def refusal(self, service: str) -> ApiError | None:
        """The error this request is answered with instead, if a fault strikes it."""
        throttle, error = self.options.throttle_rate, self.options.error_rate
        if not throttle and not error:
            return None
        with self._lock:
            draw = self._requests.random()
        if draw < throttle:
            if service == SAGEMAKER:
                return SageMakerThrottled("Rate exceeded")
            return BatchThrottled("Too Many Requests")
        if draw < throttle + error:
            message = "emulated internal failure (--error-rate)"
            return ApiError(message) if service == SAGEMAKER else BatchServerError(message)
        return None

    def capacity_error(self) -> bool:
        """Whether the training job about to start will find no capacity."""
        if not self.options.capacity_error_rate:
            return False
        with self._lock:
            return self._capacity.random() < self.options.capacity_error_rate
