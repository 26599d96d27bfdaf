"""Deprecated: moved to :mod:`~airflow_quota_provider.triggers.batch`."""

from __future__ import annotations

from airflow_quota_provider.moved import warn_moved
from airflow_quota_provider.triggers.batch import ServiceJobTrigger

__all__ = ["ServiceJobTrigger"]

warn_moved(__name__)
