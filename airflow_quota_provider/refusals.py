"""Refusals no retry can change fail the Airflow task at once, retries unused.

Airflow's task runner retries a task whatever it raised, except an
``AirflowFailException`` (and a sensor's timeout). A job its share could never
hold, an invalid ``training_config``, a share that does not exist: each of these
``permanent`` :class:`~airflow_quota_provider.exceptions.QuotaError` would be
refused again on every retry, after the retry delay, so the task fails on its
first try with :class:`RequestRefused`, raised from the refusal (its
``__cause__`` and ``refusal``). Errors that are not permanent (a DISABLED share,
a failed job, an AWS call) are raised as they are and retried as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_quota_provider.exceptions import QuotaError


class RequestRefused(AirflowFailException):
    """The task's request can never succeed; ``refusal`` says why.

    The message starts with the refusal's class (``CannotFit: job ... refused ...``),
    so the task's log names it on the line Airflow prints.
    """

    def __init__(self, refusal: QuotaError) -> None:
        self.refusal = refusal
        super().__init__(f"{type(refusal).__name__}: {refusal}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.refusal,))


@contextmanager
def failing_at_once() -> Iterator[None]:
    """Within the block, a ``permanent`` refusal becomes :class:`RequestRefused`."""
    try:
        yield
    except QuotaError as error:
        if not error.permanent:
            raise
        raise RequestRefused(error) from error
