"""The statuses of an AWS Batch service job, in the groups the provider reads them by.

A job waits (``SUBMITTED``, ``PENDING``, ``RUNNABLE``), then holds its capacity
(``SCHEDULED``, ``STARTING``, ``RUNNING``; a preempted job goes back to waiting), then
ends (``SUCCEEDED``, ``FAILED``). Each group is in the order of that life, which is the
order it is listed in.
"""

from __future__ import annotations

from typing import Final

WAITING_STATUSES: Final = ("SUBMITTED", "PENDING", "RUNNABLE")
"""Statuses of a service job that waits for capacity."""

HOLDING_STATUSES: Final = ("SCHEDULED", "STARTING", "RUNNING")
"""Statuses in which a service job holds its capacity (its ``capacityUsage``)."""

ACTIVE_STATUSES: Final = (*WAITING_STATUSES, *HOLDING_STATUSES)
"""Statuses of a service job that has not ended."""

TERMINAL_STATUSES: Final = ("SUCCEEDED", "FAILED")
"""Statuses of a service job that has ended."""
