"""BatchBackend against the local endpoint: what it costs in AWS calls, and ended jobs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from airflow_quota_provider.exceptions import UnknownJob
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.view.backend import BatchBackend
from tests.emulator.conftest import QUEUE, Endpoint, submit

pytestmark = pytest.mark.usefixtures("aws_env")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def spent(endpoint: Endpoint, before: dict[str, Any]) -> dict[str, int]:
    after = endpoint.stats()["operations"]
    counts = {}
    for op, outcomes in after.items():
        n = sum(outcomes.values()) - sum(before.get(op, {}).values())
        if n:
            counts[op] = n
    return counts


def test_ended_jobs_are_described_once_and_explained(endpoint: Endpoint) -> None:
    done = submit(endpoint.batch, "vision", 1, name="short", duration=60)
    endpoint.advance(300)
    clock = Clock()
    backend = BatchBackend(BatchQuotaHook(aws_conn_id=None), ttl=15, clock=clock)
    before = endpoint.stats()["operations"]
    backend.queue(QUEUE)
    assert spent(endpoint, before)["batch.DescribeServiceJob"] == 1
    clock.now = 16
    before = endpoint.stats()["operations"]
    view = backend.queue(QUEUE)
    assert "batch.DescribeServiceJob" not in spent(endpoint, before)
    (attempt,) = endpoint.batch.describe_service_job(jobId=done)["attempts"]
    held = (attempt["stoppedAt"] - attempt["startedAt"]) / 1000  # 1 instance, seconds
    used = sum(p.used.get("ml.p4d.24xlarge", 0) * p.seconds for p in view.utilization)
    assert used == pytest.approx(held, abs=0.01 * 900)
    found = backend.explain(done)
    assert found.summary == (
        f"{done} SUCCEEDED: Received status from SageMaker: Training job completed"
    )
    with pytest.raises(UnknownJob, match="service job 'nope' does not exist"):
        backend.explain("nope")


def test_concurrent_readers_share_one_read(endpoint: Endpoint) -> None:
    backend = BatchBackend(BatchQuotaHook(aws_conn_id=None))
    before = endpoint.stats()["operations"]
    readers = [threading.Thread(target=backend.queue, args=(QUEUE,)) for _ in range(5)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert spent(endpoint, before)["batch.GetJobQueueSnapshot"] == 1
