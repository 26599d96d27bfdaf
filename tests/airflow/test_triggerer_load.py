"""Every trigger kind of the provider at once on a real triggerer, with a reclaim meanwhile.

Real api-server, scheduler (LocalExecutor), dag-processor and triggerer, the local AWS
endpoint and ``airflow-quota pool-manager --watch-sagemaker``; the DAGs are
``tests/triggers/load/triggerer_load.py``. Deferred at once: 20 ``QuotaCapacitySensor``
on a pools fleet (each reads the ``airflow_api_default`` connection in the triggerer),
20 on an AWS Batch job queue and 20 ``QuotaTrainingOperator`` service jobs (the AWS
connection), 24 ``PoolTrainingOperator`` training jobs; then nlp's training task makes
the pool manager clear 4 of vision's deferred tasks (their triggers are cancelled, and
on Airflow 3.3 their ``on_kill`` stops the training jobs). Over all of it the triggerer
must stay up, its event loop never blocked: every Airflow line logs "Triggerer's async
thread was blocked for N seconds" past 0.2 s, and a trigger that reads a connection from
a thread of its own killed Airflow 3.1's trigger runner ("Response read out of order",
then "Trigger runner process has died! Exiting.").

One pause may remain: a full garbage collection of the interpreter, which stops every
thread of the trigger runner, its event loop too, for as long as it walks the heap (0.2
to 0.7 s on a loaded 2-core machine). It follows a burst of allocations, such as loading
botocore's endpoints and service models for the first boto3 clients of the process.
Triggers that built a client each (as before their clients were shared) set off one
after another: 8 or 9 pauses of 0.3 to 2.7 s on Airflow 3.2 and 3.3, each logged as
"blocked". ``tests/triggers/load/gc_probe``
records those collections in the trigger runner; up to two "blocked" lines are excused
(with shared clients, one after the first clients and at times one more as the heap grows:
two of 0.27 and 0.32 s on Airflow 3.0.6), and each only if without the collection it spans
the loop would have stayed under 0.2 s.

Nor is a trigger what makes the loop late while its thread waits, ready to run, for one of
two CPUs that other stories' processes hold: beside the SageMaker story the machine's load
stood at 3.5 to 7 and the loop was reported blocked for 0.20 to 0.67 s that no collection
explained. The same probe samples that wait (Linux's schedstat of the runner's main
thread) every 0.1 s; a "blocked" line fails the test when what neither the collections nor
that wait explain is past 0.2 s.

Time: about 2 min on 2 cores (``tests/DURATIONS.md``: 128 s): 84 deferred tasks started
through a real scheduler, and a reclaim.
"""

from __future__ import annotations

import bisect
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.demo.airflow_api import AirflowApi, AirflowApiError
from airflow_quota_provider.demo.processes import Processes, wait_for
from airflow_quota_provider.demo.stack import Stack, StackSettings
from tests.emulator.conftest import G5, make_client, submit, training_payload
from tests.postgres import postgres_database
from tests.triggers.load.triggerer_load import RECLAIMING, TASKS, VISION_TRAINING

pytestmark = pytest.mark.slow

LOAD = Path(__file__).resolve().parents[1] / "triggers" / "load"
DAG_IDS = (
    "load_pools_sensor",
    "load_batch_sensor",
    "load_service_jobs",
    "load_training_vision",
    "load_training_nlp",
)
LOAD_SECONDS = 60
"""How long everything stays deferred after the reclaim, the triggerer watched."""
BLOCKED = re.compile(r"Triggerer's async thread was blocked for ([0-9.]+) seconds")
STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d+)?")
"""A log line's time, UTC, as each Airflow line writes it: ``2026-12-04T12:00:23.221567Z``
(3.1 on), ``2026-12-04 12:19:54`` (3.0's trigger runner, to the second)."""
DIED = "Trigger runner process has died"
THRESHOLD = 0.2
"""What every Airflow line logs "blocked" past: 0.1 s of its watchdog's sleep, 0.1 s late."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("triggerer-load")
    for database in postgres_database():
        settings = StackSettings(
            workdir=workdir,
            dags_folder=LOAD,
            quota_config=LOAD / "batch.yaml",
            database_url=database,
            emulator_args=("--instance-limit", "ml.p4d.24xlarge=24"),
            extra_env={
                # what Airflow 3.3 logs past (its default); earlier lines always use 0.2 s
                "AIRFLOW__TRIGGERER__BLOCKED_MAIN_THREAD_WARNING_THRESHOLD": "0.2",
                # more task processes at once only slow each other down on 2 cores
                "AIRFLOW__CORE__PARALLELISM": "8",
            },
        )
        with Processes(workdir / "logs") as processes:
            stack = Stack(settings, processes)
            host = stack.api_url.removeprefix("http://")
            stack.env["AIRFLOW_CONN_AIRFLOW_API_DEFAULT"] = (
                f"http://{settings.username}:{settings.password}@{host}"
            )
            probe = [str(LOAD / "gc_probe"), stack.env.get("PYTHONPATH", "")]
            stack.env["PYTHONPATH"] = ":".join(filter(None, probe))
            stack.env["QUOTA_GC_LOG"] = str(workdir / "logs" / "gc-pauses.jsonl")
            stack.env["QUOTA_WAIT_LOG"] = str(workdir / "logs" / "cpu-waits.jsonl")
            stack.start(DAG_IDS)
            stack.start_pool_manager(LOAD / "fleet.yaml", "--watch-sagemaker")
            wait_for("the pools", partial(pools_made, stack.api), 60, processes)
            yield stack


def pools_made(api: AirflowApi) -> bool:
    try:
        answer = api.get("/api/v2/pools?limit=100")
    except AirflowApiError:
        return False
    return {"quota-nlp-p4d", "quota-vision-p4d"} <= {pool["name"] for pool in answer["pools"]}


def count(api: AirflowApi, dag_id: str, state: str) -> int:
    """Task instances of ``dag_id`` (every run) in ``state``."""
    answer = api.get(f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances?state={state}&limit=1")
    return int(answer["total_entries"])


def deferred(api: AirflowApi, dag_ids: tuple[str, ...] = DAG_IDS) -> int:
    return sum(count(api, dag_id, "deferred") for dag_id in dag_ids)


def task_instances(api: AirflowApi, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    answer = api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=100")
    return list(answer["task_instances"])


def reclaimed(api: AirflowApi, run_id: str) -> list[str]:
    """Vision's training tasks the pool manager cleared for nlp's."""
    note = "Cleared by the quota pool manager for load_training_nlp/"
    found = task_instances(api, "load_training_vision", run_id)
    return [ti["task_id"] for ti in found if (ti.get("note") or "").startswith(note)]


ANSWERS = {
    "load_pools_sensor": "share nlp could start",
    "load_batch_sensor": "share nlp could start",
    "load_service_jobs": "RUNNABLE, position",
    "load_training_vision": "following training job load-training-vi",
}
"""What each DAG's trigger logs once it has read its connection and its first answer."""


def answered(stack: Stack, dag_id: str) -> int:
    """How many tasks of ``dag_id`` have a trigger that logged its first answer: a trigger
    stuck reading its connection would wait deferred for ever, and say nothing."""
    folder = stack.home / "logs" / f"dag_id={dag_id}"
    return len(
        {
            log.parent.name
            for log in folder.glob("run_id=*/task_id=*/*.trigger.*.log")
            if ANSWERS[dag_id] in log.read_text(errors="replace")
        }
    )


def triggerer_log(stack: Stack) -> list[str]:
    return (stack.processes.log_dir / "triggerer.log").read_text(errors="replace").splitlines()


def gc_pauses(stack: Stack) -> list[tuple[float, float]]:
    """The trigger runner's full garbage collections of 50 ms or more: (start, end), on the
    wall clock."""
    path = Path(stack.env["QUOTA_GC_LOG"])
    lines = path.read_text().splitlines() if path.exists() else []
    pauses = map(json.loads, lines)
    return [(pause["start"], pause["end"]) for pause in pauses if pause["runner"]]


def cpu_waits(stack: Stack) -> list[tuple[float, float]]:
    """The trigger runner's main thread's wait for a CPU so far, sampled: (moment on the
    wall clock, seconds waited), in order. Empty if the kernel keeps no schedstat."""
    path = Path(stack.env["QUOTA_WAIT_LOG"])
    samples = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return sorted((sample["at"], sample["waited"]) for sample in samples)


def waited(waits: list[tuple[float, float]], moment: float) -> float:
    """The seconds waited for a CPU by ``moment``, between the samples around it."""
    times = [at for at, _ in waits]
    after = bisect.bisect_left(times, moment)
    if after == 0:
        return waits[0][1] if waits else 0.0
    if after == len(waits):
        return waits[-1][1]
    (t0, w0), (t1, w1) = waits[after - 1], waits[after]
    return w0 + (w1 - w0) * (moment - t0) / (t1 - t0)


@dataclass(frozen=True)
class Late:
    """A "blocked" line: how late the loop was, and how much of it a full garbage
    collection and waiting for a CPU (the machine's load, not a trigger) account for."""

    line: str
    seconds: float
    collecting: float
    waiting: float

    @property
    def unexplained(self) -> float:
        return self.seconds - self.collecting - self.waiting


def lateness(
    blocked: list[str], pauses: list[tuple[float, float]], waits: list[tuple[float, float]]
) -> list[Late]:
    """Each "blocked" line with the collections it spans and the CPU wait within it. A
    line logged to the second spans the whole second; one without a time is explained by
    nothing."""
    found = []
    for line in blocked:
        seconds = float(BLOCKED.findall(line)[0])
        stamp = STAMP.match(line)
        if stamp is None:
            found.append(Late(line, seconds, 0.0, 0.0))
            continue
        logged = datetime.fromisoformat(f"{stamp[1]}T{stamp[2]}{stamp[3] or ''}+00:00")
        since, until = logged.timestamp() - seconds, logged.timestamp() + (0 if stamp[3] else 1)
        collecting = sum(
            min(end, until) - max(start, since)
            for start, end in pauses
            if start < until and end > since
        )
        waiting = waited(waits, until) - waited(waits, since)
        found.append(Late(line, seconds, collecting, min(waiting, seconds)))
    return found


def hold_the_batch_queue(stack: Stack) -> None:
    """Vision's jobs, not from Airflow, take all 4 g5 of the queue (2 of them nlp's) for hours:
    the Batch sensors wait and the service jobs stay RUNNABLE behind them."""
    batch = make_client(stack.emulator_url, "batch")
    for number in range(4):
        payload = training_payload(1, G5)
        submit(batch, "vision", name=f"holder-{number}", duration=36_000, payload=payload)


def test_every_trigger_kind_deferred_at_once_through_a_reclaim_never_blocks_the_triggerer(
    stack: Stack,
) -> None:
    api, processes = stack.api, stack.processes
    started = time.monotonic()
    hold_the_batch_queue(stack)
    runs = {
        dag_id: api.trigger(dag_id)
        for dag_id in ("load_training_vision", "load_service_jobs", "load_batch_sensor")
    }
    wait_for(
        "vision's training tasks to take the whole fleet and defer",
        lambda: count(api, "load_training_vision", "deferred") == VISION_TRAINING,
        240,
        processes,
        every=2,
    )
    # nlp's own p4d are all lent now: its sensors wait
    runs["load_pools_sensor"] = api.trigger("load_pools_sensor")
    peak = VISION_TRAINING + 3 * TASKS
    wait_for(f"{peak} tasks to defer", lambda: deferred(api) == peak, 240, processes, every=2)
    ramp = time.monotonic() - started

    runs["load_training_nlp"] = api.trigger("load_training_nlp")
    wait_for(
        "the pool manager to clear vision's deferred tasks for nlp's",
        lambda: len(reclaimed(api, runs["load_training_vision"])) >= RECLAIMING,
        120,
        processes,
        every=1,
    )
    until = time.monotonic() + LOAD_SECONDS
    wait_for("the load to last", lambda: time.monotonic() > until, LOAD_SECONDS + 30, processes)

    for dag_id in DAG_IDS:
        assert count(api, dag_id, "failed") + count(api, dag_id, "up_for_retry") == 0, dag_id
    assert count(api, "load_training_vision", "deferred") >= VISION_TRAINING - RECLAIMING
    for dag_id in ("load_pools_sensor", "load_batch_sensor", "load_service_jobs"):
        assert count(api, dag_id, "deferred") == TASKS, dag_id
    for dag_id in ANSWERS:
        expected = VISION_TRAINING if dag_id == "load_training_vision" else TASKS
        assert answered(stack, dag_id) == expected, dag_id
    log = triggerer_log(stack)
    blocked = [line for line in log if BLOCKED.search(line)]
    pauses = gc_pauses(stack)
    late = lateness(blocked, pauses, cpu_waits(stack))
    print(
        f"\n{peak} tasks deferred {ramp:.0f} s after the first was triggered; "
        f"{time.monotonic() - started:.0f} s in all; the trigger runner's full garbage "
        f"collections: {[f'{end - start:.2f} s' for start, end in pauses]}; "
        f"blocked: {late}"
    )
    assert not [line for line in log if DIED in line]
    assert [one for one in late if one.unexplained > THRESHOLD] == []
    by_collections = [one for one in late if one.seconds - one.waiting > THRESHOLD]
    assert len(by_collections) <= 2, "shared clients set off no more than two collections"
