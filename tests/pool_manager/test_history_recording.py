"""The pool manager records its fleet's usage history: what a cycle adds, how it is kept
in the database (SQLite and the local PostgreSQL), and how a restarted manager or a
standby taking over goes on from what the database holds without counting anything
twice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.cycle_history import cycle_figures, starts_of
from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.history_store import HistoryStore, preemption_record
from airflow_quota_provider.airflow_pools.recording import CycleRecording
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.core import PreemptionKind
from airflow_quota_provider.core.history import (
    NAMES,
    Figures,
    History,
    JobStart,
    PreemptionRecord,
    integrate,
)
from airflow_quota_provider.core.retention import Retention
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.exceptions import HistoryNotRecorded
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.core.builders import queue, share
from tests.pool_manager.fake_http import serving
from tests.pool_manager.test_decide import key, task
from tests.pool_manager.test_manager_standing import FLEET, A, B
from tests.pool_manager.test_preempt_ended import FakeAirflow, pool_task

RUNNING, QUEUED, SCHEDULED = TaskState.RUNNING, TaskState.QUEUED, TaskState.SCHEDULED
T0 = 1_796_000_000.0
"""Seconds since the epoch; a multiple of 3,600 (2026-11-29 02:13:20 UTC is not)."""
T0 -= T0 % 3600


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def held(task_id: str, pool: str, slots: int, started: float, try_number: int = 1) -> PoolTask:
    return replace(
        task(task_id, pool, slots, RUNNING, started=started),
        try_number=try_number,
        scheduled_at=started - 10,
    )


def figures(**named: int) -> Figures:
    return Figures(**named)


# -- one cycle, pure --------------------------------------------------------------------


def test_a_cycles_figures_count_holders_and_waiting_tasks_as_the_page_does() -> None:
    tasks = [
        task("a1", A, 2, RUNNING),
        task("a2", A, 1, QUEUED),  # borrows b's idle unit
        task("b1", B, 2, SCHEDULED),
        task("x", "other-pool", 8, RUNNING),  # not the fleet's
    ]
    assert cycle_figures(FLEET, tasks) == {
        ("a", "gpu"): figures(owned=2, own_use=2, borrowed=1),
        ("b", "gpu"): figures(owned=2, lent=1, idle=1, waiting=2, waiting_jobs=1),
        (None, "gpu"): figures(owned=4, own_use=3, idle=1, waiting=2, waiting_jobs=1),
    }


@pytest.mark.parametrize(
    ("seen", "recorded", "stopped", "want"),
    [
        pytest.param(
            replace(task("a1", A, 2, RUNNING, started=T0 - 5), try_number=1, scheduled_at=T0 - 65),
            set(),
            {},
            [JobStart(_ms(T0 - 5), "a", str(key("a1")), {"gpu": 2}, 1, _ms(T0 - 65))],
            id="running: started at its start_date, waited since scheduled",
        ),
        pytest.param(
            replace(task("a1", A, 2, RUNNING, started=T0 - 5), try_number=1),
            {(str(key("a1")), 1)},
            {},
            [],
            id="a try recorded before is not recorded again",
        ),
        pytest.param(
            replace(task("a1", A, 1, QUEUED, run_date=T0 - 30), try_number=1, start_date=None),
            set(),
            {},
            [JobStart(_ms(T0), "a", str(key("a1")), {"gpu": 1}, 1, _ms(T0 - 30))],
            id="queued, no start_date: starts at the cycle, waited since its run's date",
        ),
        pytest.param(
            replace(task("a1", A, 1, RUNNING, started=T0 - 2), try_number=3),
            set(),
            {key("a1"): _ms(T0 - 40)},
            [JobStart(_ms(T0 - 2), "a", str(key("a1")), {"gpu": 1}, 3, _ms(T0 - 40))],
            id="a later try without scheduled_when waited since its preemption",
        ),
        pytest.param(
            replace(task("a1", A, 1, TaskState.RESTARTING, started=T0 - 2), try_number=1),
            set(),
            {},
            [],
            id="restarting: cleared, not a start",
        ),
    ],
)
def test_a_try_holding_its_slots_is_a_start_once(
    seen: PoolTask,
    recorded: set[tuple[str, int]],
    stopped: dict[TaskKey, int],
    want: list[JobStart],
) -> None:
    assert starts_of(FLEET, [seen], _ms(T0), recorded, stopped) == want


# -- in the database --------------------------------------------------------------------

Cycle = tuple[float, Sequence[PoolTask]]

STORY: list[Cycle] = [
    (T0, [task("a1", A, 2, SCHEDULED)]),
    (T0 + 5, [held("a1", A, 2, T0 + 3)]),
    (T0 + 10, [held("a1", A, 2, T0 + 3)]),  # nothing changed: nothing written
    (T0 + 15, [held("a1", A, 2, T0 + 3), held("a2", A, 2, T0 + 14)]),  # a borrows b's 2
    (T0 + 60, [held("a2", A, 2, T0 + 14), held("b1", B, 1, T0 + 58)]),
    (T0 + 120, []),
]
"""A fleet's cycles: ``a1`` waits, runs alone, ``a2`` borrows b's two GPUs, ``a1`` ends and
``b1`` runs beside ``a2``, then all is idle."""


def record(recording: CycleRecording, cycles: Sequence[Cycle]) -> None:
    for now, tasks in cycles:
        recording.record(FLEET, tasks, now)


def totals(history: History, since: float, until: float) -> dict[object, dict[str, float]]:
    """Instance-seconds of each nonzero figure per key."""
    found = integrate(history, _ms(since), _ms(until))
    return {
        k: {name: v / 1000 for name, v in zip(NAMES, sums, strict=True) if v}
        for k, sums in found.items()
        if any(sums)
    }


def test_a_recorded_story_reads_back_with_the_figures_worked_by_hand(store: Store) -> None:
    history = HistoryStore(store, "gpus")
    recording = CycleRecording(history)
    record(recording, STORY)
    read = history.read(FLEET, _ms(T0), _ms(T0 + 200))
    assert read.end == _ms(T0 + 120)  # known until the last cycle
    assert totals(read, T0, T0 + 200) == {
        ("a", "gpu"): {
            "owned": 240.0,
            "own_use": 2 * 115,  # a1 or a2 (or both) hold at least 2 from 5 s to 120 s
            "borrowed": 2 * 45,  # a2 from 15 s to 60 s
            "idle": 2 * 5,
            "waiting": 2 * 5,
            "waiting_jobs": 5,
        },
        ("b", "gpu"): {
            "owned": 240.0,
            "own_use": 1 * 60,  # b1 from 60 s
            "lent": 2 * 45,
            "idle": 2 * 15 + 1 * 60,
        },
        (None, "gpu"): {
            "owned": 480.0,
            "own_use": 2 * 10 + 4 * 45 + 3 * 60,
            "idle": 4 * 5 + 2 * 10 + 1 * 60,
            "waiting": 2 * 5,
            "waiting_jobs": 5,
        },
    }
    assert [(s.job_id, s.at, s.wait) for s in read.starts] == [
        (str(key("a1")), _ms(T0 + 3), 10_000),
        (str(key("a2")), _ms(T0 + 14), 10_000),
        (str(key("b1")), _ms(T0 + 58), 10_000),
    ]


def test_only_changes_are_written(store: Store) -> None:
    history = HistoryStore(store, "gpus")
    record(CycleRecording(history), STORY)
    read = history.read(FLEET, _ms(T0 - 1), _ms(T0 + 200))
    per_cycle = sorted({c.at for c in read.changes})
    assert per_cycle == [_ms(T0), _ms(T0 + 5), _ms(T0 + 15), _ms(T0 + 60), _ms(T0 + 120)]


def test_a_restart_and_a_take_over_go_on_from_the_database_counting_nothing_twice(
    store: Store, tmp_path: Path
) -> None:
    """Two recorders on one database in turn (the first stops, a standby takes over, the
    first takes the lead again) record what one recorder alone would."""
    alone = HistoryStore(Store(f"sqlite:///{tmp_path / 'alone.db'}"), "gpus")
    record(CycleRecording(alone), STORY)
    history = HistoryStore(store, "gpus")
    first, standby = CycleRecording(history), CycleRecording(HistoryStore(store, "gpus"))
    record(first, STORY[:3])
    record(standby, STORY[3:5])
    first.forget()  # it takes the lead again
    record(first, STORY[5:])
    read, want = (h.read(FLEET, _ms(T0 - 1), _ms(T0 + 200)) for h in (history, alone))
    assert read == want
    assert len(read.starts) == 3  # a1 held across the take-over: one start


def test_a_cycle_is_never_recorded_before_what_the_database_knows(store: Store) -> None:
    history = HistoryStore(store, "gpus")
    record(CycleRecording(history), STORY[:2])
    late = CycleRecording(HistoryStore(store, "gpus"))
    late.record(FLEET, [], T0 - 100)  # a standby whose clock is far behind
    read = history.read(FLEET, _ms(T0), _ms(T0 + 10))
    assert read.end == _ms(T0 + 5)
    assert {c.at for c in read.changes if c.figures.own_use == 0 and c.share == "a"} == {
        _ms(T0),
        _ms(T0 + 5),
    }


def test_downsampling_keeps_the_integrals_and_drops_what_is_older_than_kept(
    store: Store,
) -> None:
    retention = Retention(changes=600, fine=1200, keep=3600, fine_step=60, coarse_step=300)
    history = HistoryStore(store, "gpus")
    recording = CycleRecording(history, downsample_every=1e9)
    cycles = [
        (T0 + i * 7.0, [held("a1", A, 1 + i % 3, T0)] if i % 5 else [])
        for i in range(int(3000 / 7))
    ]
    record(recording, cycles)
    end = cycles[-1][0]
    before = history.read(FLEET, _ms(T0), _ms(end))
    rows_before = len(before.changes)
    history.downsample(_ms(end), retention)
    after = history.read(FLEET, _ms(T0), _ms(end))
    assert len(after.changes) < rows_before / 2
    assert after.buckets
    for since, until in [(T0, T0 + 600), (T0 + 300, T0 + 2700), (T0, end)]:
        assert totals(after, since, until) == totals(before, since, until)
    history.downsample(_ms(end + 7200), retention)  # all of it older than kept
    assert history.latest() == ({}, _ms(end))
    gone = history.read(FLEET, _ms(T0), _ms(end))
    assert (gone.changes, gone.buckets, gone.starts) == ((), (), ())


def test_a_preemption_names_the_preemptors_share_by_its_pool(store: Store) -> None:
    at = datetime.fromtimestamp(T0 + 50, UTC)
    stop = Stop(
        key("a1"),
        A,
        PreemptionKind.RECLAIM,
        key("b1"),
        False,
        "note",
        2,
        started=T0 + 20,
        try_number=1,
        preemptor_pool=B,
    )
    store.record_preemption(stop, at)
    (row,) = store.preemptions_between(_ms(T0), _ms(T0 + 60))
    assert preemption_record(FLEET, row) == PreemptionRecord(
        at=_ms(T0 + 50),
        kind="RECLAIM",
        share="a",
        job_id=str(key("a1")),
        demand={"gpu": 2},
        preemptor_share="b",
        preemptor=str(key("b1")),
        seconds_lost=30.0,
    )
    assert store.preemptions_between(_ms(T0 + 51), _ms(T0 + 60)) == []


def test_a_reader_is_told_when_nothing_is_recorded_yet(store: Store) -> None:
    with pytest.raises(HistoryNotRecorded) as raised:
        HistoryStore(store, "gpus").read(FLEET, 0, 1)
    assert str(raised.value) == (
        "no usage history of fleet gpus is recorded: no pool manager of this version has "
        "cycled for it yet"
    )


# -- in the manager's cycle -------------------------------------------------------------


def test_each_cycle_of_the_manager_records_and_a_new_manager_goes_on(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'manager.db'}"
    with serving(FakeAirflow()) as airflow:
        airflow.pools = {A: 0, B: 0}
        airflow.tasks = [pool_task("a1", A, "scheduled")]
        clock = [T0]

        def manager() -> PoolManager:
            store = Store(url)
            gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
            recording = CycleRecording(HistoryStore(store, FLEET.config.job_queue))
            return PoolManager(FLEET, gateway, store, clock=lambda: clock[0], recording=recording)

        first = manager()
        first.cycle()
        clock[0] = T0 + 5
        airflow.tasks = [pool_task("a1", A, "running")]
        first.cycle()
        clock[0] = T0 + 10
        manager().cycle()  # a restart: nothing changed, nothing written
    history = HistoryStore(Store(url, create=False), FLEET.config.job_queue, create=False)
    read = history.read(FLEET, _ms(T0 - 1), _ms(T0 + 20))
    assert read.end == _ms(T0 + 10)
    assert sorted({c.at for c in read.changes}) == [_ms(T0), _ms(T0 + 5)]
    assert [(s.job_id, s.attempt) for s in read.starts] == [(str(key("a1")), 1)]


def test_owned_capacity_is_figured_with_the_config_in_force_and_not_before_the_first_cycle(
    store: Store,
) -> None:
    """A config taken live (b's share grown from 2 to 3 of 5 GPUs at 60 s) counts from
    the cycle that ran it; nothing is owned before the fleet's first cycle."""
    grown = Fleet.of(
        queue(
            share("a").capacity(gpu=2).lend_and_borrow(),
            share("b").capacity(gpu=3).lend_and_borrow(),
            gpu=5,
        )
    )
    history = HistoryStore(store, "gpus")
    recording = CycleRecording(history)
    recording.record(FLEET, [], T0 + 30)
    recording.record(grown, [], T0 + 60)
    recording.record(grown, [], T0 + 90)
    read = history.read(FLEET, _ms(T0), _ms(T0 + 90))
    owned = {k: v["owned"] for k, v in totals(read, T0, T0 + 90).items()}
    assert owned == {
        ("a", "gpu"): 2 * 60,
        ("b", "gpu"): 2 * 30 + 3 * 30,
        (None, "gpu"): 4 * 30 + 5 * 30,
    }
