"""Two teams' GPU tasks in the pools of a quota config (tests/pool_manager/fleet.yaml).

Each task holds its GPUs for ``seconds`` (a DAG run conf key), like a training
step on a GPU worker would.
"""

from __future__ import annotations

import time

from airflow.sdk import DAG, task


@task(weight_rule="absolute")
def train(seconds: str | float = 5.0) -> float:
    started = time.monotonic()
    time.sleep(float(seconds))
    return time.monotonic() - started


for team, slots in (("vision", 4), ("nlp", 2)):
    with DAG(f"pools_{team}", schedule=None, catchup=False, tags=["pool-manager"]):
        train.override(pool=f"quota-{team}-gpu", pool_slots=slots, priority_weight=1)(
            seconds="{{ dag_run.conf.get('seconds', 5) }}"
        )

# a vision task that must not be preempted twice: its first preemption fails it
with DAG("pools_vision_once", schedule=None, catchup=False, tags=["pool-manager"]):
    train.override(
        pool="quota-vision-gpu",
        pool_slots=4,
        priority_weight=1,
        executor_config={"quota": {"preemption_retries": 0}},
    )(seconds="{{ dag_run.conf.get('seconds', 5) }}")
