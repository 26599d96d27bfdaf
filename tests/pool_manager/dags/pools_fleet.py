"""Two teams' GPU tasks in the pools of a quota config (tests/pool_manager/fleet.yaml).

Each task holds its GPUs for ``seconds`` (a DAG run conf key), like a training
step on a GPU worker would; its tries after the first for ``then_seconds`` if the conf
has it (a preempted task's next try need not take as long to show that it ran again).
"""

from __future__ import annotations

import time

from airflow.sdk import DAG, task


@task(weight_rule="absolute")
def train(seconds: str | float = 5.0) -> float:
    started = time.monotonic()
    time.sleep(float(seconds))
    return time.monotonic() - started


SECONDS = (
    "{{ dag_run.conf.get('seconds', 5) if ti.try_number <= 1 "
    "else dag_run.conf.get('then_seconds', dag_run.conf.get('seconds', 5)) }}"
)

for team, slots in (("vision", 4), ("nlp", 2)):
    with DAG(f"pools_{team}", schedule=None, catchup=False, tags=["pool-manager"]):
        train.override(pool=f"quota-{team}-gpu", pool_slots=slots, priority_weight=1)(
            seconds=SECONDS
        )

# a vision task that must not be preempted twice: its first preemption fails it
with DAG("pools_vision_once", schedule=None, catchup=False, tags=["pool-manager"]):
    train.override(
        pool="quota-vision-gpu",
        pool_slots=4,
        priority_weight=1,
        executor_config={"quota": {"preemption_retries": 0}},
    )(seconds=SECONDS)
