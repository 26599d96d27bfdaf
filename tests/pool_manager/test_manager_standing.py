"""The manager keeps the core's state between cycles and heals it from a full read.

Against a stand-in Airflow (the one of ``test_preempt_ended``): cycles one after the
other decide from the same kept state as tasks start, end and arrive, each cycle as
``decide`` would from the same read, and a heal finds nothing to correct.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.decide import Start, decide
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.gateway import pool_task as read_task
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.core.builders import queue, share
from tests.pool_manager.fake_http import serving
from tests.pool_manager.test_decide import key
from tests.pool_manager.test_preempt_ended import FakeAirflow, pool_task

FLEET = Fleet.of(
    queue(
        share("a").capacity(gpu=2).lend_and_borrow(),
        share("b").capacity(gpu=2).lend_and_borrow(),
        gpu=4,
    )
)
A, B = "quota-a-gpu", "quota-b-gpu"


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    with serving(FakeAirflow()) as server:
        yield server


def test_cycles_decide_from_the_kept_state_as_a_rebuild_and_a_heal_finds_nothing(
    airflow: FakeAirflow, tmp_path: Path
) -> None:
    airflow.pools = {A: 0, B: 0}
    airflow.tasks = [pool_task("a1", A, "scheduled")]
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    manager = PoolManager(
        FLEET, gateway, Store(f"sqlite:///{tmp_path / 'manager.db'}"), clock=lambda: 100.0
    )
    first = manager.cycle().plan
    assert first.start == (Start(key("a1"), A, 2, 0),)
    kept = manager.standing
    airflow.tasks = [  # a1 started; b1 arrived
        pool_task("a1", A, "running"),
        pool_task("b1", B, "scheduled"),
        pool_task("b2", B, "scheduled"),
    ]
    second = manager.cycle().plan
    read = [read_task(ti) for ti in airflow.tasks]
    assert second.start == decide(FLEET, read, 100.0).start == (Start(key("b1"), B, 2, 0),)
    assert manager.standing is kept
    assert airflow.pools == {A: 0, B: 2}
    airflow.tasks = [pool_task("b1", B, "running"), pool_task("b2", B, "scheduled")]  # a1 ended
    manager.heal_every = 0.0
    third = manager.cycle().plan
    assert third.start == (Start(key("b2"), B, 2, 2),)
    assert manager.standing is kept and kept is not None and kept.differences == 0
