"""The pool manager on real Airflow processes: an owner reclaims what a borrower took.

An ``airflow api-server``, ``scheduler`` (LocalExecutor), ``dag-processor`` and
``triggerer`` and ``airflow-quota pool-manager`` run as separate processes. The
vision task takes all 4 GPUs (2 of them borrowed from nlp); when nlp's task
arrives, the manager clears the vision task (a reclaim), opens nlp's pool only
once the vision task's process is gone, and the vision task runs again later
and succeeds without using up a retry.

Time: about 2 min on 2 cores (``tests/DURATIONS.md``: 123 s in 7 tests sharing one stack;
the reclaim story 63 s, as the borrower's process must be gone before nlp's pool opens).
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.task_history import TaskHistory
from airflow_quota_provider.airflow_pools.task_mirror import TaskMirror
from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack
from airflow_quota_provider.versions import release
from tests.pool_manager.conftest import (
    HERE,
    managed_stack,
    state_of,
    task_instance,
    trigger,
    wait_state,
)
from tests.pool_manager.history_checks import conservation_breaks, recorded
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow


class Statsd:
    """A StatsD listener over real UDP that keeps the provider's lines (every Airflow
    process sends its own metrics too: they are read and dropped, so none is lost)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536).decode()
            except TimeoutError:
                continue
            self.lines += [line for line in data.splitlines() if "quota_provider" in line]

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture(scope="module")
def statsd() -> Iterator[Statsd]:
    listener = Statsd()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, statsd: Statsd) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager")
    dags = ("pools_vision", "pools_nlp", "pools_vision_once")
    metrics = {
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
    }
    # Airflow's own database on PostgreSQL: on a machine loaded past 20, the api-server
    # answered a trigger 500 "Database error" after 5 s (SQLite's wait for its one writer)
    for database_url in postgres_database():
        with managed_stack(
            workdir, HERE / "fleet.yaml", dags, extra_env=metrics, database_url=database_url
        ) as stack:
            yield stack


def test_an_owner_reclaims_its_gpus_and_the_borrower_runs_again_later(
    stack: Stack, statsd: Statsd
) -> None:
    api = stack.api

    # long enough to be reclaimed while it runs; its next try shows it ran again
    vision_run = trigger(api, "pools_vision", seconds=40, then_seconds=5)
    wait_state(stack, "pools_vision", vision_run, "running", "the vision task to borrow nlp's GPUs")
    wait_for(
        "the manager to shut vision's pool once its task holds the slots (between two "
        "admissions a pool has 0 slots: a task that ends frees none Airflow could hand out)",
        lambda: api.get("/api/v2/pools/quota-vision-gpu")["slots"] == 0,
        30,
        stack.processes,
    )
    nlp_run = trigger(api, "pools_nlp", seconds=3)
    seen: list[tuple[str | None, str | None]] = []

    def nlp_done() -> bool:
        vision = state_of(api, "pools_vision", vision_run, "train")
        nlp = state_of(api, "pools_nlp", nlp_run, "train")
        if not seen or seen[-1] != (vision, nlp):
            seen.append((vision, nlp))
        return nlp == "success"

    wait_for("the nlp task to reclaim and finish", nlp_done, 180, stack.processes, every=0.2)
    # the nlp task never ran beside the borrower's process
    nlp_ran = [i for i, (_, nlp) in enumerate(seen) if nlp == "running"]
    assert nlp_ran, seen
    assert all(vision != "running" for vision, _ in seen[nlp_ran[0] :]), seen

    what = "the vision task to run again and succeed"
    wait_state(stack, "pools_vision", vision_run, "success", what, 180)
    nlp = task_instance(api, "pools_nlp", nlp_run, "train")
    latency = _seconds(nlp["start_date"]) - _seconds(nlp["scheduled_when"])
    print(f"\nreclaim latency (owner's task scheduled -> running, 1 s cycles): {latency:.1f} s")
    vision = task_instance(api, "pools_vision", vision_run, "train")
    assert vision["try_number"] == 2, vision
    assert vision["note"].startswith(
        f"Cleared by the quota pool manager for pools_nlp/{nlp_run}/train (RECLAIM): share "
        "vision borrows 2 gpu (uses 4, owns 2); share nlp reclaims it"
    ), vision["note"]
    # the manager's metrics: the borrowing was measured, the reclaim counted
    lines = set(statsd.lines)
    assert "airflow.quota_provider.gpus.vision.preemptions:1|c" in lines, sorted(lines)[:20]
    for gauge in ("share.gpus.vision.gpu.borrowed:2|g", "share.gpus.nlp.gpu.lent:2|g"):
        assert f"airflow.quota_provider.{gauge}" in lines, sorted(lines)[:40]


def _seconds(moment: str) -> float:
    return datetime.fromisoformat(moment).timestamp()


EDGE_SECONDS = 2.5
"""How far the manager's record of a moment may lie from Airflow's own time of it: its 1 s
cycle, plus the read and the api-server's own lag."""


def test_usage_tells_the_reclaim_as_airflows_own_times_do(stack: Stack) -> None:
    """``airflow-quota usage`` of the fleet over the reclaim story above, against figures
    worked from Airflow's times of each try (scheduled, queued, ended), not from the
    recorder: vision held 4 gpu (2 its own, 2 nlp's) from each try's queueing to its end,
    the first try until Airflow scheduled the second; nlp held its 2 while it ran; each
    waited from being scheduled to being queued. Every figure within one
    :data:`EDGE_SECONDS` per start and end it spans; each unit's own use, lent and idle
    make what it owns; the fleet's borrowed is its lent."""
    api = stack.api
    (vision_run,) = runs_of(api, "pools_vision", first=1)
    (nlp_run,) = runs_of(api, "pools_nlp", first=1)
    first, second = tries(api, "pools_vision", vision_run)
    (nlp,) = tries(api, "pools_nlp", nlp_run)
    # from the second after vision was scheduled (the manager recorded the fleet from its
    # first cycle, before it made the pools: nothing is counted before that, not even what a
    # share owns)
    since, until = math.ceil(first["scheduled"]), math.ceil(second["ended"]) + 2
    held_v = (second["scheduled"] - first["queued"]) + (second["ended"] - second["queued"])
    held_n = nlp["ended"] - nlp["queued"]
    waited = {
        "vision": (first["queued"] - first["scheduled"]) + (second["queued"] - second["scheduled"]),
        "nlp": nlp["queued"] - nlp["scheduled"],
    }
    window = until - since
    # the manager's record ends with the last cycle it ran: wait for one past the window
    wait_for(
        "the manager to record a cycle after the window",
        lambda: recorded(database(stack), HERE / "fleet.yaml", since, until).end >= until * 1000,
        60,
        stack.processes,
    )
    expected = {  # gpu-seconds, and how many starts and ends each figure spans
        ("vision", "own_use_hours"): (2 * held_v, 4),
        ("vision", "borrowed_hours"): (2 * held_v, 4),
        ("vision", "idle_hours"): (2 * (window - held_v), 4),
        ("vision", "lent_hours"): (0.0, 0),
        ("nlp", "own_use_hours"): (2 * held_n, 2),
        ("nlp", "lent_hours"): (2 * held_v, 4),
        ("nlp", "idle_hours"): (2 * (window - held_n - held_v), 6),
        ("nlp", "borrowed_hours"): (0.0, 0),
    }
    report = usage(stack, "--since", utc(since), "--until", utc(until), "--json")
    rows = {row["share"]: row for row in report["rows"]}
    assert {(row["share"], row["unit"]) for row in report["rows"]} == {
        ("nlp", "gpu"),
        ("vision", "gpu"),
    }
    compared = {
        f"{share} {figure.removesuffix('_hours')}": (rows[share][figure] * 3600, seconds)
        for (share, figure), (seconds, _) in expected.items()
    }
    shown = {name: f"{found:.1f}/{seconds:.1f}" for name, (found, seconds) in compared.items()}
    print(f"\nusage of the reclaim's {window} s, gpu-s recorded/as Airflow timed it: {shown}")
    for (share, figure), (seconds, edges) in expected.items():
        found = rows[share][figure] * 3600
        assert abs(found - seconds) <= 2 * edges * EDGE_SECONDS, (share, figure, found, seconds)
    history = recorded(database(stack), HERE / "fleet.yaml", since, until)
    assert conservation_breaks(history, {"gpu": 4}) == []
    for share, row in rows.items():
        assert row["owned_hours"] * 3600 == pytest.approx(2 * window, abs=1e-6)
        parts = row["own_use_hours"] + row["lent_hours"] + row["idle_hours"]
        assert parts == pytest.approx(row["owned_hours"], abs=1e-9), row
        starts = 2 if share == "vision" else 1  # a try requeued by a preemption waits again
        assert abs(row["mean_wait"] - waited[share]) <= starts * 2 * EDGE_SECONDS, (row, waited)
    assert sum(r["borrowed_hours"] for r in rows.values()) == pytest.approx(
        sum(r["lent_hours"] for r in rows.values()), abs=1e-9
    )
    assert (rows["vision"]["jobs_started"], rows["nlp"]["jobs_started"]) == (1, 1)
    suffered = {
        share: (row["preemptions_suffered"], row["preemptions_caused"])
        for share, row in rows.items()
    }
    assert suffered == {"vision": (1, 0), "nlp": (0, 1)}
    # the work lost: vision's 4 gpu from its first try's start to the reclaim, at most
    lost = rows["vision"]["hours_lost"] * 3600
    assert 0 < lost <= 4 * (second["scheduled"] - first["started"] + EDGE_SECONDS), lost


def runs_of(api: Any, dag_id: str, first: int) -> list[str]:
    """The ids of the first ``first`` runs of ``dag_id``, oldest first."""
    found = sorted(api.get(f"/api/v2/dags/{dag_id}/dagRuns")["dag_runs"], key=_run_after)
    return [run["dag_run_id"] for run in found[:first]]


def _run_after(run: dict[str, Any]) -> float:
    return _seconds(run["run_after"])


def tries(api: Any, dag_id: str, run_id: str) -> list[dict[str, float]]:
    """Each try of the run's ``train`` task as Airflow recorded it: when it was scheduled,
    queued, started and ended (seconds since the epoch), first try first."""
    route = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/train/tries"
    found = sorted(api.get(route)["task_instances"], key=lambda ti: ti["try_number"])
    names = {"scheduled": "scheduled_when", "queued": "queued_when", "started": "start_date"}
    return [
        {
            **{key: _seconds(ti[name]) for key, name in names.items()},
            "ended": _seconds(ti["end_date"]),
        }
        for ti in found
    ]


def utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def database(stack: Stack) -> str:
    """The manager's database."""
    return f"sqlite:///{stack.settings.workdir / 'airflow-quota-pool-manager.db'}"


def usage(stack: Stack, *options: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "airflow_quota_provider.cli", "usage"]
    done = subprocess.run(
        [*command, "--config", str(HERE / "fleet.yaml"), "--database", database(stack), *options],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_gateway_reads_what_the_manager_reads(stack: Stack) -> None:
    gateway = AirflowGateway(stack.api_url, Credentials("admin", "admin"))
    pools = gateway.pools()
    assert {"quota-vision-gpu", "quota-nlp-gpu"} <= set(pools)
    assert pools["quota-nlp-gpu"].include_deferred
    started = time.monotonic()
    assert gateway.task_instances(["quota-vision-gpu", "quota-nlp-gpu"]) == []
    assert time.monotonic() - started < 10
    assert gateway.calls == 3, "one login, one pools page, one task-instance page"
    from airflow import __version__

    assert gateway.version() == release(__version__)  # what shapes its clears


def test_status_explain_and_events_show_the_pools_fleet(stack: Stack) -> None:
    """After the reclaim: the CLI reads the fleet from Airflow and the manager's database."""
    common = [
        *("--config", str(HERE / "fleet.yaml"), "--api-url", stack.api_url),
        *("--username", stack.settings.username, "--database", database(stack)),
    ]
    env = {**os.environ, "AIRFLOW_QUOTA_API_PASSWORD": stack.settings.password, "NO_COLOR": "1"}

    def cli(*words: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "airflow_quota_provider.cli", *words, *common],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    status = cli("status")
    assert "share nlp: LEND_AND_BORROW" in status and "share vision: LEND_AND_BORROW" in status
    assert "ALERT" not in status, status  # the manager cycles, on the config status reads
    heartbeat = stack.api.get("/api/v2/variables/quota_pool_manager.gpus")
    assert json.loads(heartbeat["value"])["database_url"].endswith("airflow-quota-pool-manager.db")
    events = cli("events")
    assert "RECLAIM" in events and "pools_vision/" in events, events
    run_id = trigger(stack.api, "pools_vision", seconds=30)
    wait_state(stack, "pools_vision", run_id, "running", "a vision task to run")
    explained = cli("explain", "pools_vision", "train", run_id)
    assert f"pools_vision/{run_id}/train is RUNNING with 4 gpu in share vision, borrowing" in (
        explained
    ), explained
    stack.api.set_task_state("pools_vision", run_id, "train", "failed")


def test_the_gpu_quotas_page_api_shows_the_pools_fleet(stack: Stack) -> None:
    """The api-server's GPU Quotas app, configured with the fleet, answers for it."""
    assert [q["name"] for q in stack.api.get("/quota/api/v1/queues")] == ["gpus"]
    shares = {s["name"]: s for s in stack.api.get("/quota/api/v1/queues/gpus/shares")}
    assert set(shares) == {"nlp", "vision"}
    assert shares["vision"]["borrowing"] == "borrow limit unlimited"
    events = stack.api.get("/quota/api/v1/queues/gpus/events")
    assert any(e["kind"] == "RECLAIM" and e["share"] == "vision" for e in events), events


def test_a_task_that_caps_its_preemptions_at_0_is_failed_by_its_first(stack: Stack) -> None:
    """``executor_config={"quota": {"preemption_retries": 0}}``: a reclaim fails the task."""
    api = stack.api
    vision_run = trigger(api, "pools_vision_once", seconds=60)
    wait_state(stack, "pools_vision_once", vision_run, "running", "the vision task to borrow")
    nlp_run = trigger(api, "pools_nlp", seconds=1)
    wait_state(stack, "pools_nlp", nlp_run, "success", "the nlp task to reclaim and finish", 180)
    vision = task_instance(api, "pools_vision_once", vision_run, "train")
    assert (vision["state"], vision["try_number"]) == ("failed", 1), vision
    assert vision["note"].startswith(
        f"Failed by the quota pool manager for pools_nlp/{nlp_run}/train (RECLAIM): "
    ), vision["note"]


def test_a_task_waiting_behind_another_gets_a_start_from_its_tasks_history(stack: Stack) -> None:
    """A vision run holds all 4 GPUs; a second waits behind it: the page's API predicts when
    it starts, from the earlier successful runs of pools_vision's train task."""
    api = stack.api
    done = trigger(api, "pools_vision", seconds=5)
    wait_state(stack, "pools_vision", done, "success", "a vision run to finish", 180)
    history = TaskHistory(AirflowGateway(stack.api_url, Credentials("admin", "admin")))
    runs = history.durations([("pools_vision", "train")])[("pools_vision", "train")]
    assert runs and all(seconds >= 5 for seconds in runs), runs
    first = trigger(api, "pools_vision", seconds=120)
    wait_state(stack, "pools_vision", first, "running", "a vision task to hold the GPUs")
    second = trigger(api, "pools_vision", seconds=1)
    wait_state(stack, "pools_vision", second, "scheduled", "the second vision task to wait")

    def predicted() -> tuple[dict[str, Any], dict[str, Any] | None]:
        queue = api.get("/quota/api/v1/queues/gpus")
        waiting = api.get("/quota/api/v1/queues/gpus/jobs?state=waiting")
        job = next((j for j in waiting if j["job_id"] == f"pools_vision/{second}/train"), None)
        return queue, job

    def settled(job: dict[str, Any] | None) -> bool:
        return job is not None and not (job["predicted_start"] or {}).get("guess", True)

    # an earlier read may have found no successful run yet, or not the second task yet:
    # that empty history is kept 30 s and the page's view 15 s, so the forecast rests on
    # the history within a minute
    deadline = time.monotonic() + 90
    queue, job = predicted()
    while not settled(job) and time.monotonic() < deadline:
        time.sleep(5)
        queue, job = predicted()
    assert job is not None, "the second vision task never showed as waiting"
    start = job["predicted_start"]
    assert start is not None and start["likely"] is not None, job
    assert [w["job_id"] for w in start["waits_for"]] == [f"pools_vision/{first}/train"], start
    assert not start["guess"], start  # the running task's duration rests on its history
    # the running try has outlasted the short earlier runs: expected to end soon, not in an
    # hour (the default for a task without history)
    assert queue["now"] <= start["likely"] <= queue["now"] + 600_000, (queue["now"], start)
    assert start["text"].startswith(("in about", "now")), start
    api.set_task_state("pools_vision", first, "train", "failed")
    wait_state(stack, "pools_vision", second, "success", "the second vision task to run", 180)


def test_a_read_of_what_changed_follows_a_task_from_scheduled_to_its_end(stack: Stack) -> None:
    """The manager's reads after its first are of what Airflow changed (``updated_at``): a
    task is seen waiting or holding, then gone once it ended, with no full read between;
    and the pools' own sums agree with what was read."""
    gateway = AirflowGateway(stack.api_url, Credentials("admin", "admin"))
    pools = ["quota-vision-gpu", "quota-nlp-gpu"]
    mirror = TaskMirror(gateway)
    mirror.read(pools)
    run = trigger(stack.api, "pools_nlp", seconds=3)
    states: list[str] = []

    def ended() -> bool:
        kept = [t for t in mirror.read(pools) if t.key.run_id == run]
        if kept and (not states or states[-1] != kept[0].state.value):
            states.append(kept[0].state.value)
        return bool(states) and not kept

    wait_for("the nlp task to show and then end in the reads of changes", ended, 120, every=0.5)
    assert {"scheduled", "running"} & set(states), states
    assert state_of(stack.api, "pools_nlp", run, "train") == "success"
    assert mirror.full_reads == 1 and mirror.changed_reads > 1
    assert sorted(map(str, mirror.read(pools))) == sorted(map(str, gateway.task_instances(pools)))
    assert mirror.check(gateway.pools()) == []
