"""Deprecated: moved to :mod:`~airflow_quota_provider.triggers.sagemaker`."""

from __future__ import annotations

from airflow_quota_provider.moved import warn_moved
from airflow_quota_provider.triggers.sagemaker import TrainingJobTrigger

__all__ = ["TrainingJobTrigger"]

warn_moved(__name__)
