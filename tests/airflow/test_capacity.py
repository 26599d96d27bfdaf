"""Share usage from AWS's answers, and the capacity sensor's trigger, against the local endpoint."""

from __future__ import annotations

import asyncio

from airflow_quota_provider.core.occupancy import Occupancy
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.triggers.capacity import QuotaCapacityTrigger
from tests.airflow.conftest import drive
from tests.emulator.conftest import G5, P4D, QUEUE, Endpoint, status, submit


def hook() -> BatchQuotaHook:
    return BatchQuotaHook(aws_conn_id=None, region_name="us-east-1")


def test_share_usage_shows_who_borrows_and_who_lends(endpoint: Endpoint) -> None:
    borrower = submit(endpoint.batch, "vision", 3, duration=600)
    endpoint.advance(10)
    assert status(endpoint.batch, borrower) == "RUNNING"
    usage = hook().share_usage(QUEUE)
    assert usage["vision"][P4D] == Occupancy(owned=2, used=3, own_use=2, borrowed=1, lent=0, idle=0)
    assert usage["nlp"][P4D] == Occupancy(owned=2, used=0, own_use=0, borrowed=0, lent=1, idle=1)
    assert usage["vision"][G5] == Occupancy(owned=4, used=0, own_use=0, borrowed=0, lent=0, idle=4)


def test_headroom_counts_own_idle_and_borrowable_but_not_lent_capacity(endpoint: Endpoint) -> None:
    submit(endpoint.batch, "vision", 3, duration=600)
    endpoint.advance(10)
    assert hook().share_headroom(QUEUE, "nlp") == {G5: 4, P4D: 1}
    assert hook().share_headroom(QUEUE, "vision") == {G5: 4, P4D: 1}
    assert hook().share_headroom(QUEUE, "robotics") == {}


def test_serialize_round_trip() -> None:
    trigger = QuotaCapacityTrigger(
        job_queue=QUEUE, quota_share="nlp", capacity={P4D: 2}, poll_interval=5, verify=False
    )
    classpath, kwargs = trigger.serialize()
    assert QuotaCapacityTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_the_trigger_fires_once_the_share_could_start_the_capacity(endpoint: Endpoint) -> None:
    blocker = submit(endpoint.batch, "vision", 3, duration=60)
    endpoint.advance(10)
    trigger = QuotaCapacityTrigger(
        job_queue=QUEUE, quota_share="nlp", capacity={P4D: 2}, poll_interval=0.01, aws_conn_id=None
    )
    (event,) = asyncio.run(
        drive(endpoint, trigger.run(), step=5, started_by="batch.ListQuotaShares")
    )
    assert event.payload["status"] == "success"
    assert event.payload["headroom"][P4D] >= 2
    assert status(endpoint.batch, blocker) == "SUCCEEDED"
