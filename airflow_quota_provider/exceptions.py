"""Errors raised by airflow-quota-provider.

::

    QuotaError                      base of everything raised here
    ├── ConfigError(ValueError)     a quota config is invalid; .problems lists every one
    ├── ScenarioError(ValueError)   a scenario or trace file is invalid; .problems as above
    └── AdmissionRefused            a job can never run in its share; .code, .message
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, at a field path such as ``shares[1].borrow_limit``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class QuotaError(Exception):
    """Base of all errors of this package."""


class _ProblemsError(QuotaError, ValueError):
    what = "input"

    def __init__(self, problems: Sequence[Problem], source: str | None = None) -> None:
        self.problems = tuple(problems)
        self.source = source
        where = f" in {source}" if source else ""
        count = len(self.problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"{count} {noun} with the {self.what}{where}:\n{lines}")


class ConfigError(_ProblemsError):
    """A quota configuration is invalid. All its problems are in ``problems``."""

    what = "quota config"


class ScenarioError(_ProblemsError):
    """A scenario or trace is invalid. All its problems are in ``problems``."""

    what = "scenario"


class AdmissionRefused(QuotaError):
    """A job was refused at submission because it could never run.

    :param code: a :class:`~airflow_quota_provider.core.reasons.RefusalCode` value.
    """

    def __init__(self, job_id: str, code: str, message: str) -> None:
        self.job_id = job_id
        self.code = code
        self.message = message
        super().__init__(f"job {job_id} refused ({code}): {message}")
