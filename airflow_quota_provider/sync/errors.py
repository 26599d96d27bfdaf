"""Errors of a sync: an apply refused before it began. A failed AWS call is
:class:`~airflow_quota_provider.aws_batch.errors.AwsCallFailed`, as everywhere the provider
calls AWS.

::

    QuotaError
    └── SyncError
        └── ApplyRefused        blockers, or destructive changes without permission: .reasons
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_quota_provider.exceptions import QuotaError


class SyncError(QuotaError):
    """Base of the errors of ``airflow-quota plan`` and ``apply`` that are theirs alone."""


class ApplyRefused(SyncError):
    """Apply changed nothing because of ``reasons`` (blockers or destructive changes)."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("apply refused: " + "; ".join(self.reasons))
