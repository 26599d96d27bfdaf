"""The pool manager's database, on SQLite and on the local PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from airflow_quota_provider.airflow_pools.decide import Stop, decide
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.core import PreemptionKind
from airflow_quota_provider.core.task_key import TaskKey
from tests.pool_manager.test_decide import FLEET, NLP, RESTARTING, RUNNING, VISION, key, task

AT = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)
VICTIM, URGENT = TaskKey("d", "r1", "low"), TaskKey("d", "r1", "urgent", 3)


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


def test_a_tasks_last_preemption_is_found_by_its_key(store: Store) -> None:
    assert store.last_preemption(VICTIM) is None
    store.record_preemption(stop(VICTIM), AT)
    store.record_preemption(replace(stop(VICTIM), note="the second"), AT + timedelta(seconds=5))
    store.record_preemption(stop(URGENT), AT)
    last = store.last_preemption(VICTIM)
    assert last is not None
    assert (last.key, last.note, last.at) == (VICTIM, "the second", AT + timedelta(seconds=5))
    assert store.last_preemption(TaskKey("d", "r1", "low", 0)) is None  # another map index


def test_each_share_keeps_what_it_waits_for_and_since_when_writing_only_changes(
    store: Store,
) -> None:
    holders = [task("v", VISION, 16, RUNNING, started=0)]
    waiting = [task("n1", NLP, 4, weight=5), task("n2", NLP, 2, weight=1)]
    first = decide(FLEET, [*holders, *waiting], now=100)
    store.record_cycle(first, calls=4, at=AT)
    (row,) = store.waiting()
    assert (row.share, row.key, row.code, row.since, row.waiting) == (
        "nlp",
        key("n1"),
        "PREEMPTION_IN_PROGRESS",
        AT,
        2,
    )
    assert row.message == "nlp waits for preempted jobs to stop: train/run-1/v"
    assert [(c.preempted, c.waiting, c.calls) for c in store.cycles()] == [(1, 2, 4)]
    # the same head, for the same reason, a cycle later: its since stays, nothing is recorded
    # for a cycle that did nothing
    later = AT + timedelta(seconds=5)
    stopping = [replace(holders[0], state=RESTARTING)]
    store.record_cycle(decide(FLEET, [*stopping, *waiting], now=105), calls=2, at=later)
    (row,) = store.waiting()
    assert (row.key, row.since) == (key("n1"), AT)
    assert len(store.cycles()) == 1
    # the head started: n2 heads the share now, since this cycle
    started = [task("n1", NLP, 4, RUNNING, weight=5, started=110), waiting[1]]
    busy = [task("v2", VISION, 12, RUNNING, started=50), *started]
    store.record_cycle(decide(FLEET, busy, now=110), calls=2, at=later)
    assert [(r.key, r.code, r.since, r.waiting) for r in store.waiting()] == [
        (key("n2"), "PREEMPTION_IN_PROGRESS", later, 1)
    ]
    store.record_cycle(decide(FLEET, [], now=120), calls=1, at=later)
    assert store.waiting() == []


def test_preemptions_are_counted_for_the_runs_asked_about(store: Store) -> None:
    other = TaskKey("d", "r2", "low")
    for victim in (VICTIM, VICTIM, other):
        store.record_preemption(stop(victim), AT)
    assert store.preemptions([VICTIM]) == {VICTIM: 2}
    assert store.preemptions([TaskKey("d", "r1", "other"), other]) == {other: 1}
    assert store.preemptions([]) == {}


def test_the_records_survive_a_new_store_on_the_same_database(store: Store) -> None:
    store.record_preemption(stop(VICTIM), AT)
    again = Store(str(store.engine.url.render_as_string(hide_password=False)))
    assert again.preemptions() == {VICTIM: 1}
    again.engine.dispose()
