"""Small builders for core tests: ``share("nlp").capacity(gpu=8).lend_and_borrow(limit=100)``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from airflow_quota_provider.core import (
    QueueConfig,
    QueueState,
    RunningJob,
    Share,
    ShareState,
    Sharing,
    WaitingJob,
)


class ShareBuilder:
    def __init__(self, name: str) -> None:
        self._share = Share(name=name, capacity={})

    def _with(self, **changes: Any) -> ShareBuilder:
        self._share = replace(self._share, **changes)
        return self

    def capacity(self, **units: int) -> ShareBuilder:
        return self._with(capacity=units)

    def reserve(self) -> ShareBuilder:
        return self._with(sharing=Sharing.RESERVE, borrow_limit=-1)

    def lend(self) -> ShareBuilder:
        return self._with(sharing=Sharing.LEND, borrow_limit=-1)

    def lend_and_borrow(self, limit: int = -1) -> ShareBuilder:
        return self._with(sharing=Sharing.LEND_AND_BORROW, borrow_limit=limit)

    def in_share_preemption(self) -> ShareBuilder:
        return self._with(in_share_preemption=True)

    def disabled(self) -> ShareBuilder:
        return self._with(state=ShareState.DISABLED)

    def weight(self, weight: float) -> ShareBuilder:
        return self._with(weight=weight)

    def min_runtime(self, seconds: float) -> ShareBuilder:
        return self._with(min_runtime_seconds=seconds)

    def build(self) -> Share:
        return self._share


def share(name: str) -> ShareBuilder:
    return ShareBuilder(name)


def queue(*shares: ShareBuilder, **capacity: int) -> QueueConfig:
    return QueueConfig(
        job_queue="q", capacity=capacity or {"gpu": 16}, shares=tuple(s.build() for s in shares)
    )


def waiting(
    job_id: str, share_name: str, priority: int = 0, submitted: float = 0, **demand: int
) -> WaitingJob:
    return WaitingJob(job_id, share_name, demand, priority, submitted)


def running(
    job_id: str,
    share_name: str,
    priority: int = 0,
    started: float = 0,
    terminating: bool = False,
    **demand: int,
) -> RunningJob:
    return RunningJob(job_id, share_name, demand, priority, started, terminating=terminating)


def state(
    config: QueueConfig, running_jobs: list[RunningJob], waiting_jobs: list[WaitingJob]
) -> QueueState:
    return QueueState.from_jobs(config, running_jobs, waiting_jobs)
