"""Three teams' tasks that each hold one exclusive lock per GPU they use.

The locks are the physical truth: one lock file per GPU of the fleet (``FLEET_GPUS``,
or ``QUOTA_TEST_FLEET_GPUS``) in the folder named by ``QUOTA_TEST_LOCK_DIR``, taken
with a non-blocking ``flock`` for as long as the task's process lives (the OS releases
them when it dies, cleared or not).
A task that finds fewer free locks than its ``pool_slots`` records it in
``violations.log`` and fails: the quota layer promised GPUs that were in use.

The ``celery_locks_*`` DAGs are the same tasks for the CeleryExecutor: each team's
on its own queue (``team-a``, ...), and with retries (:data:`RETRIES`). A try can only
fail when its Celery worker is killed (the scheduler fails it once its heartbeat is
too old) or when the api-server is down: a try starting then cannot say it runs, one
ending cannot say it ended, and one running cannot heartbeat, so the scheduler fails it
too. A task run by a worker that says its name (``QUOTA_TEST_WORKER``) records which
one in ``workers.log``.
"""

from __future__ import annotations

import datetime
import fcntl
import os
import time
from pathlib import Path
from typing import IO

from airflow.sdk import DAG, get_current_context, task

FLEET_GPUS = 8
RETRIES = 5
"""A task can lose a try to a killed worker and two to an api-server down for a minute
(the scheduler queues it meanwhile; it fails in ~30 s, its client's retries spent)."""
RETRY_DELAY = datetime.timedelta(seconds=10)
TASKS = {
    # team: [(task id, pool_slots, priority_weight)]
    "a": [("small", 1, 1), ("medium", 2, 5), ("large", 4, 10)],
    "b": [("small", 1, 1), ("medium", 2, 5), ("large", 4, 10)],
    "c": [("small", 1, 1), ("pair", 2, 5), ("urgent", 2, 10)],
}


def _take(slots: int) -> list[IO[str]]:
    folder = Path(os.environ["QUOTA_TEST_LOCK_DIR"])
    held: list[IO[str]] = []
    for gpu in range(int(os.environ.get("QUOTA_TEST_FLEET_GPUS", FLEET_GPUS))):
        if len(held) == slots:
            break
        handle = (folder / f"gpu-{gpu}").open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
        else:
            held.append(handle)
    if len(held) < slots:
        ti = get_current_context()["ti"]
        with (folder / "violations.log").open("a") as log:
            log.write(f"{ti.dag_id}/{ti.run_id}/{ti.task_id}: {len(held)} free of {slots}\n")
        raise RuntimeError(f"only {len(held)} free GPU locks, {slots} needed")
    return held


def _say_worker(folder: Path) -> None:
    worker = os.environ.get("QUOTA_TEST_WORKER")
    if worker:
        ti = get_current_context()["ti"]
        with (folder / "workers.log").open("a") as log:
            log.write(f"{ti.dag_id} {ti.run_id} {ti.task_id} {ti.try_number} {worker}\n")


@task(weight_rule="absolute")
def hold(slots: int, seconds: str | float) -> None:
    held = _take(slots)
    _say_worker(Path(os.environ["QUOTA_TEST_LOCK_DIR"]))
    time.sleep(float(seconds))
    for handle in held:
        handle.close()


for team, tasks in TASKS.items():
    with DAG(f"locks_{team}", schedule=None, catchup=False, tags=["pool-manager"]):
        for task_id, slots, weight in tasks:
            hold.override(
                task_id=task_id, pool=f"quota-{team}-gpu", pool_slots=slots, priority_weight=weight
            )(slots=slots, seconds="{{ dag_run.conf.get('seconds', 3) }}")

for team, tasks in TASKS.items():
    with DAG(f"celery_locks_{team}", schedule=None, catchup=False, tags=["pool-manager"]):
        for task_id, slots, weight in tasks:
            hold.override(
                task_id=task_id,
                pool=f"quota-{team}-gpu",
                pool_slots=slots,
                priority_weight=weight,
                queue=f"team-{team}",
                retries=RETRIES,
                retry_delay=RETRY_DELAY,
            )(slots=slots, seconds="{{ dag_run.conf.get('seconds', 3) }}")
