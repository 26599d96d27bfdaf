"""A quiet cycle costs Airflow two REST calls: what changed, and the pools.

Against the stand-in api-server of ``test_refusal.py`` (pools, task instances, Variables),
with the manager's clock moved 5 s a cycle: the heartbeat is read and written once in
:data:`~airflow_quota_provider.airflow_pools.heartbeat.HEARTBEAT_SECONDS`, and at once
when what it says changes (here: a cycle that failed, then one that ended well).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.heartbeat import (
    HEARTBEAT_SECONDS,
    Heartbeat,
    HeartbeatBoard,
)
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.core.builders import queue, share
from tests.pool_manager.test_refusal import RefusingAirflow, airflow, pool, ti  # noqa: F401

START = 1_796_400_000.0


def test_quiet_cycles_make_two_calls_and_the_heartbeat_two_more_once_a_period(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
) -> None:
    fleet = Fleet.of(
        queue(share("a").capacity(gpu=2).lend_and_borrow(), share("b").capacity(gpu=2), gpu=4)
    )
    a, b = fleet.pool_of("a", "gpu"), fleet.pool_of("b", "gpu")
    airflow.pools = {a: pool(a, 0, fleet), b: pool(b, 0, fleet)}
    airflow.tis = [ti("d", a, 2, "running", "2026-12-04T10:00:00Z")]
    now = [START]
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    board = HeartbeatBoard(gateway, "q", clock=lambda: now[0])
    me = Heartbeat("vm:1:ab", "db-a", "sqlite://", 5.0, START, beat_every=HEARTBEAT_SECONDS)
    manager = PoolManager(
        fleet,
        gateway,
        Store(f"sqlite:///{tmp_path / 'pm.db'}"),
        clock=lambda: now[0],
        heartbeat=board,
        me=me,
    )

    def cycle() -> int:
        before = gateway.calls
        manager._check_no_other_leader(fresh=False)  # as the loop does before each cycle
        manager.cycle()
        now[0] += 5.0
        return gateway.calls - before

    cycle()  # the first: log in, read all, write the heartbeat
    calls = [cycle() for _ in range(12)]  # at 5 s .. 60 s: written at 30 s and 60 s
    assert calls == [2, 2, 2, 2, 2, 4, 2, 2, 2, 2, 2, 4], calls
    written = board.read()
    assert written is not None and written.cycled_at == START + 60.0
    assert not written.stale(START + 60.0 + 3 * HEARTBEAT_SECONDS)
    assert written.stale(START + 60.0 + 3 * HEARTBEAT_SECONDS + 1)

    manager.beat(now[0], "cannot reach Airflow (...)")  # a failure is written at once
    assert (board.read() or me).error == "cannot reach Airflow (...)"
    assert cycle() == 3  # and the cycle that ends well next clears it at once
    assert (board.read() or me).error == ""


def test_a_heartbeat_written_before_beat_every_existed_is_stale_after_three_intervals() -> None:
    written = json.loads(replace(Heartbeat("m", "d", "u", 5.0, START), written_at=START).to_json())
    del written["beat_every"]  # as a manager of an earlier release wrote it
    old = Heartbeat.from_json(json.dumps(written))
    assert old.beat_every == 0.0 and old.period == 5.0
    assert not old.stale(START + 15.0) and old.stale(START + 15.1)
