"""The pool manager's database, on SQLite and on the local PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_quota_provider.core import PreemptionKind, Wait, WaitCode
from airflow_quota_provider.pool_manager.decide import PoolPlan, Start, Stop
from airflow_quota_provider.pool_manager.store import Store
from airflow_quota_provider.pool_manager.tasks import TaskKey
from tests.postgres import postgres_database

AT = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)
VICTIM, URGENT = TaskKey("d", "r1", "low"), TaskKey("d", "r1", "urgent", 3)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        yield Store(f"sqlite:///{tmp_path / 'manager.db'}")
        return
    for url in postgres_database():
        if url is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432")
        store = Store(url)
        yield store
        store.engine.dispose()


def stop(key: TaskKey, fails: bool = False) -> Stop:
    return Stop(key, "quota-a-gpu", PreemptionKind.IN_SHARE, URGENT, fails, f"note for {key}", 2)


def test_preemptions_are_counted_per_task_and_listed_newest_first(store: Store) -> None:
    assert store.preemptions() == {}
    store.record_preemption(stop(VICTIM), AT)
    store.record_preemption(stop(VICTIM, fails=True), AT)
    store.record_preemption(stop(URGENT), AT)
    assert store.preemptions() == {VICTIM: 2, URGENT: 1}
    assert store.preemptions([URGENT, TaskKey("d", "r9", "x")]) == {URGENT: 1}
    events = store.events()
    assert [(e.key, e.fails, e.kind, e.preemptor) for e in events] == [
        (URGENT, False, "IN_SHARE", "d/r1/urgent[3]"),
        (VICTIM, True, "IN_SHARE", "d/r1/urgent[3]"),
        (VICTIM, False, "IN_SHARE", "d/r1/urgent[3]"),
    ]
    assert events[0].at == AT


def test_a_cycle_replaces_the_waiting_reasons_of_the_last_one(store: Store) -> None:
    first = PoolPlan(
        slots={"quota-a-gpu": 2},
        start=(Start(URGENT, "quota-a-gpu", 2, 0),),
        waiting={
            VICTIM: Wait("d/r1/low", "a", WaitCode.NO_IDLE_CAPACITY, "a needs 2 gpu"),
            URGENT: Wait("d/r1/urgent[3]", "a", WaitCode.BEHIND_IN_SHARE, "2nd"),
        },
    )
    store.record_cycle(first, calls=4, at=AT)
    assert [(w.key, w.position, w.code) for w in store.waiting()] == [
        (VICTIM, 0, "NO_IDLE_CAPACITY"),
        (URGENT, 1, "BEHIND_IN_SHARE"),
    ]
    store.record_cycle(PoolPlan(slots={}), calls=2, at=AT)
    assert store.waiting() == []
    assert [(c.started, c.waiting, c.calls) for c in store.cycles()] == [(0, 0, 2), (1, 2, 4)]


def test_the_records_survive_a_new_store_on_the_same_database(store: Store) -> None:
    store.record_preemption(stop(VICTIM), AT)
    again = Store(str(store.engine.url.render_as_string(hide_password=False)))
    assert again.preemptions() == {VICTIM: 1}
    again.engine.dispose()
