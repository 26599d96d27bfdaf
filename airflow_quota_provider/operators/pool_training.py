"""Deprecated: moved to :mod:`~airflow_quota_provider.operators.sagemaker`."""

from __future__ import annotations

from airflow_quota_provider.moved import warn_moved
from airflow_quota_provider.operators.sagemaker import PoolTrainingOperator

__all__ = ["PoolTrainingOperator"]

warn_moved(__name__)
