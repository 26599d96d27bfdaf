"""A clear that Airflow carries out but answers too late is recorded all the same.

Under its lease the manager gives each change the time the lease has left, so an
api-server slow under load does not make it give up on changes it has time for; and a
change whose answer never comes in that time is asked after on the next cycle: Airflow
may have carried it out. An HTTP server stands in for the api-server (Airflow 3.1.8:
the note is a second call), with the real manager, lease, store and gateway.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials, GatewayError
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.unanswered import carried_out
from airflow_quota_provider.core.orphans import TaskSeen
from airflow_quota_provider.core.reasons import PreemptionKind
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.pool_manager.lease import Lease
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.pool_manager.fake_http import serving
from tests.pool_manager.test_refusal import VICTIM, RefusingAirflow, reclaim

NOW = 1_796_400_000.0


@pytest.fixture
def airflow() -> Iterator[RefusingAirflow]:
    with serving(RefusingAirflow()) as server:
        server.refuse = False
        yield server


def leading(
    airflow: RefusingAirflow, tmp_path: Path, budget: list[float] | None = None
) -> tuple[PoolManager, Store, Lease]:
    """A manager of :func:`reclaim`'s fleet leading on a 4 s lease; each change gets
    ``budget[0]`` seconds if given, else the lease's time left."""
    fleet = reclaim(airflow)
    store = Store(f"sqlite:///{tmp_path / 'pm.db'}")
    lease = Lease(store.engine, "q", 4.0)
    assert lease.try_acquire()
    time_left = lease.time_left if budget is None else lambda: budget[0]
    gateway = AirflowGateway(airflow.url, Credentials("m", "s"), write_budget=time_left)
    return PoolManager(fleet, gateway, store, lease=lease, clock=lambda: NOW), store, lease


def test_a_change_gets_the_time_its_lease_has_left_not_a_quarter_of_it(
    airflow: RefusingAirflow, tmp_path: Path
) -> None:
    """A 4 s lease is renewed every second; a clear that takes 1.5 s still lands."""
    airflow.clear_seconds = 1.5
    manager, store, _ = leading(airflow, tmp_path)
    manager.cycle()
    assert airflow.cleared == ["train"]
    (event,) = store.events()
    assert event.note.startswith("Cleared by the quota pool manager for own/r1/train (RECLAIM)")
    assert airflow.patched == [{"note": event.note}]


def test_a_clear_carried_out_but_answered_too_late_is_recorded_next_cycle(
    airflow: RefusingAirflow, tmp_path: Path
) -> None:
    airflow.clear_seconds = 2.0
    budget = [0.5]
    manager, store, lease = leading(airflow, tmp_path, budget)
    with pytest.raises(GatewayError, match=rf"^clear {VICTIM}: .*timed out") as raised:
        manager.cycle()
    assert raised.value.status is None
    assert airflow.cleared == ["train"] and store.events() == []  # done, not known yet

    budget[0] = 30.0
    assert lease.try_acquire()
    manager.cycle()
    (event,) = store.events()  # recorded once, at the moment it was sent, with its note
    assert event.note.startswith("Cleared by the quota pool manager for own/r1/train (RECLAIM)")
    assert event.at.timestamp() == NOW
    assert airflow.patched == [{"note": event.note}]
    assert airflow.cleared == ["train"]  # not cleared twice
    manager.cycle()
    assert len(store.events()) == 1


def test_a_clear_lost_on_the_way_is_decided_again_not_recorded(
    airflow: RefusingAirflow, tmp_path: Path
) -> None:
    airflow.clears_lost, airflow.clear_seconds = True, 1.0
    budget = [0.3]
    manager, store, lease = leading(airflow, tmp_path, budget)
    with pytest.raises(GatewayError, match="timed out"):
        manager.cycle()
    time.sleep(1.0)  # the lost clear's handler has answered

    airflow.clears_lost, airflow.clear_seconds, budget[0] = False, 0.0, 30.0
    assert lease.try_acquire()
    manager.cycle()  # the victim still runs its try: this cycle clears it, answered
    assert airflow.cleared == ["train"]
    assert len(store.events()) == 1


def test_a_write_whose_time_ran_out_is_not_sent(airflow: RefusingAirflow) -> None:
    gateway = AirflowGateway(airflow.url, Credentials("m", "s"), write_budget=lambda: 0.0)
    key = TaskKey("borrow", "r1", "train")
    with pytest.raises(GatewayError, match=r"^fail borrow/r1/train: not sent: the 0 s"):
        gateway.fail(key, "x")
    assert airflow.patched == []


def stop(fails: bool = False) -> Stop:
    key, preemptor = TaskKey("d", "r", "t"), TaskKey("o", "r", "t")
    return Stop(key, "p", PreemptionKind.RECLAIM, preemptor, fails, "note", 1, try_number=2)


@pytest.mark.parametrize(
    ("fails", "seen", "done"),
    [
        (False, None, False),  # gone: nothing to record
        (False, TaskSeen("running", 2), False),  # still runs the stopped try
        (False, TaskSeen("deferred", 2), False),
        (False, TaskSeen("success", 2), False),  # ended on its own first
        (False, TaskSeen("restarting", 2), True),
        (False, TaskSeen(None, 2), True),
        (False, TaskSeen("scheduled", 2), True),
        (False, TaskSeen("queued", 2), True),
        (False, TaskSeen("up_for_retry", 2), True),
        (False, TaskSeen("running", 3), True),  # cleared and running its next try
        (True, TaskSeen("failed", 2), True),
        (True, TaskSeen("running", 2), False),
        (True, TaskSeen("restarting", 2), False),
    ],
)
def test_whether_a_change_was_carried_out_is_read_off_the_task(
    fails: bool, seen: TaskSeen | None, done: bool
) -> None:
    assert carried_out(stop(fails), seen) is done
