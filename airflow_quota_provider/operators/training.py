"""Deprecated: moved to :mod:`~airflow_quota_provider.operators.batch`."""

from __future__ import annotations

from airflow_quota_provider.moved import warn_moved
from airflow_quota_provider.operators.batch import QuotaTrainingOperator

__all__ = ["QuotaTrainingOperator"]

warn_moved(__name__)
