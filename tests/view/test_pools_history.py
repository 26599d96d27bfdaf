"""A pools fleet's recorded history read as an AWS Batch queue's is: the history and usage
routes of the GPU Quotas API and ``airflow-quota usage --config``, with hours of the
fleet's unit (``gpu-h``).

The story, recorded through the manager's recording hook in minutes after ``T`` (two
hours ending an hour before now, on this host's clock): nlp's ``n1`` (2 GPUs) waits 10 s
and holds from 3 min on; ``n2`` (2) starts at 14 min, borrowing vision's 2 idle GPUs, and
is preempted at 59 min for vision's ``v1`` (2), which holds from 58 min; all ends at
120 min. Every figure below is worked by hand from that table.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.history_store import RECORDED, HistoryStore
from airflow_quota_provider.airflow_pools.recording import CycleRecording
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core import PreemptionKind
from airflow_quota_provider.view.api import create_app
from airflow_quota_provider.view.pools_source import PoolsBackend
from tests.pool_manager.test_decide import key, task

CONFIG = Path(__file__).parents[1] / "pool_manager" / "fleet.yaml"
FLEET = Fleet.of(load_config(CONFIG))
NLP, VISION = "quota-nlp-gpu", "quota-vision-gpu"
MINUTE = 60.0
T = (time.time() // 3600 - 3) * 3600
"""The story's start: on the hour, 2 to 3 hours ago (the 6-hour range holds it all)."""


def held(task_id: str, pool: str, started_minute: float) -> PoolTask:
    started = T + started_minute * MINUTE
    running = task(task_id, pool, 2, TaskState.RUNNING, started=started)
    return replace(running, try_number=1, scheduled_at=started - 10)


CYCLES = [
    (0, [task("n1", NLP, 2)]),
    (5, [held("n1", NLP, 3)]),
    (15, [held("n1", NLP, 3), held("n2", NLP, 14)]),
    (60, [held("n1", NLP, 3), held("v1", VISION, 58)]),
    (120, []),
]


@dataclass(frozen=True)
class Recorded:
    url: str
    store: Store


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    url = f"sqlite:///{tmp_path / 'manager.db'}"
    store = Store(url)
    recording = CycleRecording(HistoryStore(store, "gpus"))
    for minute, tasks in CYCLES:
        recording.record(FLEET, tasks, T + minute * MINUTE)
        if minute == 15:
            stop = Stop(
                key("n2"),
                NLP,
                PreemptionKind.RECLAIM,
                key("v1"),
                False,
                "Cleared by the quota pool manager for train/run-1/v1 (RECLAIM)",
                2,
                started=T + 14 * MINUTE,
                try_number=1,
                preemptor_pool=VISION,
            )
            store.record_preemption(stop, datetime.fromtimestamp(T + 59 * MINUTE, UTC))
    return Recorded(url, Store(url, create=False))


def client(store: Store) -> TestClient:
    gateway = AirflowGateway("http://127.0.0.1:9", Credentials("nobody", "unused"))
    return TestClient(create_app(lambda: PoolsBackend(FLEET, gateway, store), lambda: None))


HOURS = {
    # share: own_use, borrowed, lent, idle (gpu-h), jobs, preempted, caused, lost (gpu-h)
    "nlp": (230 / 60, 1.5, 0.0, 1 / 6, 2, 1, 0, 1.5),
    "vision": (2.0, 0.0, 1.5, 0.5, 1, 0, 1, 0.0),
}
"""nlp holds 2 from 5 to 120 min (n1; 3.83 h, 2 GPUs) and borrows 2 from 15 to 60 min;
vision lends those, holds 2 from 60 min and leaves 2 idle for the first 15 min; n2 lost
2 GPUs x 45 min. Figures start at the cycle that saw them (5, 15, 60 min)."""


def test_the_usage_route_reports_the_recorded_story(recorded: Recorded) -> None:
    answer = client(recorded.store).get("/api/v1/queues/gpus/usage?range=6h")
    assert answer.status_code == 200, answer.text
    found = answer.json()
    ended = datetime.fromtimestamp(T + 120 * MINUTE, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert found["notes"] == [
        RECORDED,
        f"known until {ended}, the last cycle recorded: no manager has cycled since",
    ]
    got = {
        row["share"]: (
            row["own_use_hours"],
            row["borrowed_hours"],
            row["lent_hours"],
            row["idle_hours"],
            row["jobs_started"],
            row["preemptions_suffered"],
            row["preemptions_caused"],
            row["hours_lost"],
        )
        for row in found["rows"]
    }
    assert got.keys() == HOURS.keys()
    for share, want in HOURS.items():
        assert got[share] == pytest.approx(want), share
    assert {row["mean_wait"] for row in found["rows"]} == {10.0}


def test_the_history_route_charts_it_with_who_preempted_whom(recorded: Recorded) -> None:
    answer = client(recorded.store).get("/api/v1/queues/gpus/history?range=6h")
    assert answer.status_code == 200, answer.text
    chart = answer.json()
    assert (chart["kind"], chart["step"]) == ("fleet", 300)
    assert [(s["share"], s["unit"]) for s in chart["shares"]] == [("nlp", "gpu"), ("vision", "gpu")]
    (mark,) = chart["preemptions"]
    assert (mark["share"], mark["preemptor_share"], mark["kind"]) == ("nlp", "vision", "RECLAIM")
    assert mark["hours_lost"] == {"gpu": 1.5}
    assert mark["reason"].startswith("Cleared by the quota pool manager for train/run-1/v1")
    step = (T + 20 * MINUTE - chart["since"] / 1000) // 300  # 20 to 25 min: n2 borrows
    nlp = chart["shares"][0]
    assert (nlp["own_use"][int(step)], nlp["borrowed"][int(step)]) == (2.0, 2.0)


def test_a_database_without_the_history_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'manager.db'}"
    Store(url)  # the manager's tables as an earlier version made them, no history's
    answer = client(Store(url, create=False)).get("/api/v1/queues/gpus/history")
    assert answer.status_code == 503
    assert answer.json()["detail"] == (
        "no usage history of fleet gpus is recorded: its pool manager's database lacks the "
        "history's tables (quota_history_bucket, quota_history_change, quota_history_mark, "
        "quota_history_start): a manager of this version adds them when it starts"
    )


def test_airflow_quota_usage_reports_the_pools_fleet_in_gpu_hours(recorded: Recorded) -> None:
    since, until = (
        datetime.fromtimestamp(T + m * MINUTE, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for m in (0, 120)
    )
    command = [sys.executable, "-m", "airflow_quota_provider.cli", "usage", "--config"]
    done = subprocess.run(
        [*command, str(CONFIG), "--since", since, "--until", until, "--database", recorded.url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"usage of fleet gpus from {since[:10]} {since[11:19]} UTC to {until[:10]} "
        f"{until[11:19]} UTC"
    )
    assert lines[2].split() == [
        "nlp",
        "gpu",
        "3.83",
        "1.50",
        "0.00",
        "0.17",
        "2",
        "10s",
        "10s",
        "1",
        "0",
        "1.50",
    ]
    assert lines[3].split() == [
        "vision",
        "gpu",
        "2.00",
        "0.00",
        "1.50",
        "0.50",
        "1",
        "10s",
        "10s",
        "0",
        "1",
        "0.00",
    ]
    assert lines[4] == (
        "hours are hours of each unit's slots (gpu-h); waits are each job's total wait "
        "before its starts"
    )
    as_json = subprocess.run(
        [*command, str(CONFIG), "--json", "--since", since, "--database", recorded.url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(as_json.stdout)["job_queue"] == "gpus"
