"""The pools fleet on Airflow's CeleryExecutor, and a chaos run against it.

Real api-server, scheduler (CeleryExecutor, Redis as broker), dag-processor and
triggerer on PostgreSQL; two Celery workers as processes of their own, ``worker-a``
serving team a's queue and ``worker-bc`` teams b's and c's; two ``airflow-quota
pool-manager --watch-sagemaker`` in HA on one PostgreSQL database; the local AWS
endpoint with ``--instance-limit`` the fleet's 8 p4d. Tasks hold one lock file per
GPU for as long as their process lives (``dags/pools_locks.py``) or run SageMaker
training jobs through ``PoolTrainingOperator`` (``dags/pools_training.py``).

First the story, each step certain: a borrower is reclaimed, re-runs and succeeds,
every task on its team's worker; a borrowing training task is reclaimed, its job
stopped, and its next try resumes from the checkpoint. Then the chaos run: 204 tasks
of three teams in waves (one team borrows, the others take back what they own) while
the leading manager is SIGKILLed twice, a Celery worker once, the triggerer once, and
the api-server is stopped for 30 s. Figures printed.

The scheduler's task heartbeat timeout is 20 s here (300 by default): a killed
worker's task instances stay ``running`` until it passes, holding their pool slots,
then go up for retry. The tasks have retries (5, 10 s apart) because a try can only
fail under this chaos: its worker killed, or the api-server down (a try that starts
cannot say so, one that runs cannot heartbeat and is failed by the scheduler after
20 s, one that ends cannot report it); none is needed otherwise.

Time: about 6 min on 2 cores (``tests/DURATIONS.md``: the chaos run 225 s, the story 98 s,
the stack and its workers 34 s): 204 tasks through kills, restarts, a 30 s outage, and the
20 s heartbeat timeout that each killed worker's tasks wait out.
"""

from __future__ import annotations

import contextlib
import importlib.util
import random
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack
from airflow_quota_provider.hooks.sagemaker import PREEMPTED_TAG
from tests.pool_manager.conftest import (
    HERE,
    kill_the_leader,
    managed_stack,
    query,
    redis_database,
    trigger,
    unadmitted_starts,
)
from tests.pool_manager.test_sagemaker_training import (
    all_jobs,
    create_outcomes,
    duplicate_jobs,
    results,
)
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow
TEAMS = ("a", "b", "c")
WORKERS = {"worker-a": ("team-a",), "worker-bc": ("team-b", "team-c")}
CONCURRENCY = 12
FLEET_GPUS = 16
INTERVAL = 1.0
LEASE = 2.5
HEARTBEAT_TIMEOUT = 20
CONFIG = HERE / "fleet_celery.yaml"
AIRFLOW_ENV = {
    # a killed worker's tasks are failed (and retried) once their heartbeat is this old
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
    # a task whose Celery message died with its worker before it started
    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "90",
    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT_CHECK_INTERVAL": "10",
    # a restarted triggerer takes over the dead one's triggers after this
    "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "15",
}


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    if importlib.util.find_spec("airflow.providers.celery") is None:
        pytest.skip("apache-airflow-providers-celery is not installed: no CeleryExecutor")
    yield from redis_database()


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, broker: str, managers_db: str, locks: Path
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager-celery")
    dag_ids = tuple(f"celery_{kind}_{team}" for kind in ("locks", "training") for team in TEAMS)
    options = ("--database", managers_db, "--lease", f"{LEASE:g}", "--watch-sagemaker")
    for airflow_db in postgres_database():
        with managed_stack(
            workdir,
            CONFIG,
            dag_ids,
            {
                **AIRFLOW_ENV,
                "QUOTA_TEST_LOCK_DIR": str(locks),
                "QUOTA_TEST_FLEET_GPUS": str(FLEET_GPUS),
            },
            airflow_db,
            emulator_args=("--instance-limit", "ml.p4d.24xlarge=8"),
            manager_args=(*options, "--orphan-grace", "20"),
            interval=INTERVAL,
            executor="CeleryExecutor",
            celery_broker_url=broker,
        ) as stack:
            first = stack.processes.started["pool-manager"]
            stack.processes.start("pool-manager-2", first.command, first.env, first.cwd)
            for name, queues in WORKERS.items():
                stack.start_celery_worker(name, queues, CONCURRENCY, {"QUOTA_TEST_WORKER": name})
            for name in WORKERS:
                stack.wait_celery_worker(name)
            yield stack


# -- reading what happened --------------------------------------------------------------


def task_instances(stack: Stack, runs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    found = []
    for dag_id, run_id in runs:
        answer = stack.api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        found += answer["task_instances"]
    return found


def all_ended(stack: Stack, runs: list[tuple[str, str]]) -> bool:
    """Every run and every task instance of it ended (a clear made as a run ended can
    reopen it: Airflow's clear cannot say "only if still running")."""
    states = [stack.api.run_state(dag_id, run_id) for dag_id, run_id in runs]
    if not all(state in ("success", "failed") for state in states):
        return False
    return all(ti["state"] in ("success", "failed") for ti in task_instances(stack, runs))


def preemptions(managers_db: str) -> list[dict[str, Any]]:
    rows = query(
        managers_db,
        "SELECT dag_id, run_id, task_id, try_number, kind, preemptor, pool, at "
        "FROM quota_preemption ORDER BY id",
    )
    return [dict(row._mapping) for row in rows]


def worker_of_tries(locks: Path) -> dict[tuple[str, str, str, int], str]:
    """Which worker ran each lock task's try, as the tries wrote it."""
    found = {}
    log = locks / "workers.log"
    for line in log.read_text().splitlines() if log.exists() else []:
        dag_id, run_id, task_id, try_number, worker = line.split()
        found[(dag_id, run_id, task_id, int(try_number))] = worker
    return found


def violations(locks: Path) -> list[str]:
    log = locks / "violations.log"
    return log.read_text().splitlines() if log.exists() else []


def running(stack: Stack, dag_id: str, run_id: str) -> bool:
    states = stack.api.task_states(dag_id, run_id)
    return all(state == "running" for state in states.values())


def team_of(dag_id: str) -> str:
    return dag_id.rsplit("_", 1)[1]


# -- the story --------------------------------------------------------------------------


def test_on_celery_a_borrower_is_reclaimed_and_every_task_runs_on_its_teams_worker(
    stack: Stack, locks: Path, managers_db: str
) -> None:
    api = stack.api
    # a's two runs take 14 GPUs while it owns 8; its two training runs 6 p4d of its 4
    a_locks = [trigger(api, "celery_locks_a", 15) for _ in range(2)]
    a_training = [trigger(api, "celery_training_a", 3600) for _ in range(2)]

    def a_holds_all() -> bool:
        instances = sum(
            job["ResourceConfig"]["InstanceCount"]
            for job in all_jobs(stack)
            if job["TrainingJobStatus"] == "InProgress"
        )
        return instances == 6 and all(running(stack, "celery_locks_a", r) for r in a_locks)

    wait_for("a to borrow GPUs and p4d", a_holds_all, 180, stack.processes)
    # c (LEND) wants its own 4 GPUs, 2 are idle; b and c want their own 2 p4d each, 2 are
    # idle: a gives some back
    runs = [("celery_locks_a", run_id) for run_id in a_locks]
    runs.append(("celery_locks_c", trigger(api, "celery_locks_c", 2)))
    runs += [("celery_training_a", run_id) for run_id in a_training]
    runs += [
        (f"celery_training_{team}", trigger(api, f"celery_training_{team}", 600)) for team in "bc"
    ]
    wait_for("every run to end", lambda: all_ended(stack, runs), 400, stack.processes, every=3)

    done = task_instances(stack, runs)
    assert {ti["state"] for ti in done} == {"success"}, done
    assert all(ti["queue"] == f"team-{team_of(ti['dag_id'])}" for ti in done), done
    reclaims = [p for p in preemptions(managers_db) if p["kind"] == "RECLAIM"]
    by_pool = Counter(p["pool"] for p in reclaims)
    assert by_pool["quota-a-gpu"] >= 1 and by_pool["quota-a-train-p4d"] >= 1, reclaims
    # the GPUs' victims: cleared with the reason, re-run on team a's worker, succeeded
    workers = worker_of_tries(locks)
    for victim in (p for p in reclaims if p["pool"] == "quota-a-gpu"):
        ti = next(
            t
            for t in done
            if (t["dag_id"], t["dag_run_id"], t["task_id"])
            == (victim["dag_id"], victim["run_id"], victim["task_id"])
        )
        assert ti["note"].startswith("Cleared by the quota pool manager for celery_locks_c/")
        assert "(RECLAIM)" in ti["note"] and ti["try_number"] >= 2
    expected = {"celery_locks_a": "worker-a", "celery_locks_c": "worker-bc"}
    ran = {key: worker for key, worker in workers.items() if (key[0], key[1]) in runs}
    assert ran and all(worker == expected[key[0]] for key, worker in ran.items()), ran
    # the p4d victims: the try's job stopped and tagged, the next try resumed from it
    jobs = {job["TrainingJobName"]: job for job in all_jobs(stack)}
    training = [run for run in runs if run[0].startswith("celery_training")]
    trained = {(t["dag_id"], t["dag_run_id"], t["task_id"]): t for t in results(stack, training)}
    for victim in (p for p in reclaims if p["pool"] == "quota-a-train-p4d"):
        key = (victim["dag_id"], victim["run_id"], victim["task_id"])
        identity = TaskKey(victim["dag_id"], victim["run_id"], victim["task_id"])
        stopped = jobs[identity.training_job_name(victim["try_number"])]
        assert stopped["TrainingJobStatus"] == "Stopped"
        assert stopped["tags"][PREEMPTED_TAG].startswith("Cleared by the quota pool manager for")
        xcom = trained[key]["xcom"]
        assert xcom["preemptions"] >= 1, xcom
        last = jobs[xcom["training_job_name"]]
        messages = " ".join(t.get("StatusMessage", "") for t in last["SecondaryStatusTransitions"])
        assert "Resumed from the checkpoint at s3://bucket/checkpoints/" in messages
    assert create_outcomes(stack).get("ResourceLimitExceeded", 0) == 0
    assert violations(locks) == []


# -- the chaos run ----------------------------------------------------------------------

WAVES = 12  # of 5 runs of 3 GPU tasks
TRAINING_RUNS = 12  # of 2 training tasks, in the first waves
API_OUTAGE = 30.0
CHAOS = {
    1: "kill_the_leading_manager",
    3: "kill_a_worker",
    5: "kill_the_triggerer",
    7: "stop_the_api_server",
    9: "kill_the_leading_manager",
}
"""What to do after which wave."""


class Chaos:
    """What the run does to the stack, and what it saw while doing it."""

    def __init__(self, stack: Stack, managers_db: str) -> None:
        self.stack = stack
        self.managers_db = managers_db
        self.takeovers: list[float] = []
        self.done: list[str] = []

    def kill_the_leading_manager(self) -> None:
        victim, took = kill_the_leader(self.stack, self.managers_db)
        self.takeovers.append(took)
        self.done.append(f"SIGKILL {victim} (leading)")

    def kill_a_worker(self, name: str = "worker-a") -> None:
        """SIGKILL the worker with everything it started, its tasks' processes too (which
        Airflow puts in process groups of their own), as the loss of its host would."""
        managed = self.stack.processes.started[name]
        tree = psutil.Process(managed.popen.pid).children(recursive=True)
        self.stack.processes.kill(name)
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        self.stack.restart_celery_worker(name)
        self.done.append(f"SIGKILL {name} and its {len(tree)} processes, restarted")

    def kill_the_triggerer(self) -> None:
        self.stack.processes.kill("triggerer")
        self.stack.processes.restart("triggerer")
        self.done.append("SIGKILL triggerer, restarted")

    def stop_the_api_server(self) -> None:
        self.stack.processes.stop("api-server")
        time.sleep(API_OUTAGE)
        self.stack.processes.restart("api-server")
        wait_for("the api-server again", self.stack.api.healthy, 120, self.stack.processes)
        self.done.append(f"api-server stopped for {API_OUTAGE:g} s, restarted")


Wave = list[tuple[str, float]]
"""Runs to trigger at once, as (DAG, seconds of work)."""


def chaos_plan() -> list[tuple[Wave, Wave]]:
    """Waves of runs: first one team floods (a, or b, borrowing what the others leave
    idle), then the other two teams' runs arrive and take back what they own."""
    shuffle = random.Random(20261205)
    waves: list[tuple[Wave, Wave]] = []
    for n in range(WAVES):
        flood_team = "ab"[n % 2]
        others = [team for team in TEAMS if team != flood_team]
        # the flood's tasks last long enough to still borrow when the owners come back
        flood: Wave = [(f"celery_locks_{flood_team}", shuffle.choice([3, 4, 5])) for _ in range(3)]
        back: Wave = [(f"celery_locks_{team}", shuffle.choice([1, 2])) for team in others]
        if n < TRAINING_RUNS:  # a-train borrows, b-train and c-train reclaim
            team = "aabc"[n % 4]
            flood.append((f"celery_training_{team}", shuffle.choice([600, 900])))
        waves.append((flood, back))
    return waves


def reclaim_latencies(stack: Stack, rows: list[dict[str, Any]]) -> list[float]:
    """For each task that reclaimed lent capacity: its try's scheduled -> running."""
    latencies = []
    owners = {(row["preemptor"], row["at"]) for row in rows if row["kind"] == "RECLAIM"}
    seen = set()
    for preemptor, at in sorted(owners, key=lambda owner: owner[1]):
        dag_id, run_id, task_id = preemptor.split("/")
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/tries"
        for one in stack.api.get(path)["task_instances"]:
            scheduled, started = one["scheduled_when"], one["start_date"]
            key = (preemptor, one["try_number"])
            if key in seen or not scheduled or not started:
                continue
            if moment(scheduled) <= at.timestamp() <= moment(started):
                latencies.append(moment(started) - moment(scheduled))
                seen.add(key)
    return latencies


def moment(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def training_figures(stack: Stack, runs: set[str]) -> dict[str, Any]:
    """Of the training jobs of these runs: tries with two jobs, a task instance's jobs in
    progress at once, jobs still running, jobs the reconciler stopped as orphans."""
    jobs = [job for job in all_jobs(stack) if job["tags"].get("airflow:run_id") in runs]
    two_in_a_try, overlapping = duplicate_jobs(jobs)
    return {
        "jobs": len(jobs),
        "two_in_a_try": two_in_a_try,
        "overlapping": overlapping,
        "left_running": [
            job["TrainingJobName"]
            for job in jobs
            if job["TrainingJobStatus"] in ("InProgress", "Stopping")
        ],
        "reconciled": sum(
            "Stopped by airflow-quota" in f"{job.get('FailureReason')} {job.get('StatusMessage')}"
            for job in jobs
        ),
    }


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return float("nan")
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def applied_twice(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    tries = Counter((p["dag_id"], p["run_id"], p["task_id"], p["try_number"]) for p in rows)
    return [key for key, count in tries.items() if count > 1]


def play(stack: Stack, chaos: Chaos) -> list[tuple[str, str]]:
    """Trigger the plan's waves, doing the chaos between some of them."""
    runs = []
    for n, (flood, back) in enumerate(chaos_plan()):
        for wave, pause in ((flood, 5), (back, 2)):
            runs += [(dag_id, trigger(stack.api, dag_id, seconds)) for dag_id, seconds in wave]
            time.sleep(pause)  # the flood starts, borrowing; then the owners come back
        if n in CHAOS:
            getattr(chaos, CHAOS[n])()
    return runs


def test_chaos_run_on_celery_never_promises_a_gpu_twice_nor_leaves_a_job(
    stack: Stack, locks: Path, managers_db: str
) -> None:
    api = stack.api
    chaos = Chaos(stack, managers_db)
    earlier = len(preemptions(managers_db))
    limits_before = create_outcomes(stack).get("ResourceLimitExceeded", 0)
    started = time.monotonic()
    runs = play(stack, chaos)
    wait_for("every run to end", lambda: all_ended(stack, runs), 900, stack.processes, every=5)
    elapsed = time.monotonic() - started

    done = task_instances(stack, runs)
    outcomes = Counter(ti["state"] for ti in done)
    rows = preemptions(managers_db)[earlier:]
    kinds = Counter(p["kind"] for p in rows)
    latencies = reclaim_latencies(stack, rows)
    training = training_figures(stack, {run for dag, run in runs if "training" in dag})
    limit_errors = create_outcomes(stack).get("ResourceLimitExceeded", 0) - limits_before
    timeouts = api.get("/api/v2/eventLogs?event=heartbeat%20timeout&limit=1")["total_entries"]
    lost = violations(locks)
    median = statistics.median(latencies) if latencies else float("nan")
    print(
        f"\n{len(done)} tasks ({len(runs)} runs) in {elapsed:.0f} s on Celery: "
        f"{dict(outcomes)}; tries {dict(sorted(Counter(t['try_number'] for t in done).items()))}"
        f"; chaos: {'; '.join(chaos.done)}; take-overs "
        f"{', '.join(f'{s:.1f} s' for s in chaos.takeovers)}; heartbeat timeouts {timeouts}; "
        f"over-allocation (GPU locks found taken) {len(lost)}; preemptions {len(rows)} "
        f"{dict(kinds)}, applied twice {len(applied_twice(rows))}; reclaim latency median "
        f"{median:.1f} s, p95 {p95(latencies):.1f} s (n={len(latencies)}); training jobs "
        f"{training['jobs']}: tries with two jobs {training['two_in_a_try']}, a task's jobs "
        f"overlapping {training['overlapping']}, orphaned after the run "
        f"{len(training['left_running'])}, stopped by the reconciler {training['reconciled']}; "
        f"ResourceLimitExceeded {limit_errors}; started without the managers admitting them, "
        f"before a task of their pool that came first: {unadmitted_starts(stack)}"
    )
    assert len(done) >= 200
    assert lost == [], lost
    assert outcomes == {"success": len(done)}, [ti for ti in done if ti["state"] != "success"]
    assert training["two_in_a_try"] == 0 and training["overlapping"] == 0, training
    assert training["left_running"] == [], training
    assert applied_twice(rows) == []
    assert kinds["RECLAIM"] > 0 and latencies, rows
    assert len(chaos.takeovers) == 2
    assert all(seconds <= 2 * LEASE for seconds in chaos.takeovers), chaos.takeovers
