"""Tasks of one share that show whom Airflow hands freed slots to (tests/pool_manager/
fleet.yaml: nlp owns 2 of the fleet's 4 GPUs and may borrow vision's idle 2).

``order_hold`` and ``order_brief`` (2 GPUs each, not preemptible) fill nlp's 4; then
``order_head`` (4 GPUs, priority 50) and ``order_small`` (2 GPUs, priority 10) wait.
When ``order_brief`` ends, its 2 GPUs are not enough for the head, and Airflow alone
would give them to ``order_small`` at once.
"""

from __future__ import annotations

import time

from airflow.sdk import DAG, task

STEADY = {"quota": {"preemptible": False}}


@task(weight_rule="absolute", pool="quota-nlp-gpu")
def train(seconds: str | float) -> float:
    started = time.monotonic()
    time.sleep(float(seconds))
    return time.monotonic() - started


for name, slots, priority, config in (
    ("hold", 2, 1, STEADY),
    ("brief", 2, 1, STEADY),
    ("head", 4, 50, {}),
    ("small", 2, 10, {}),
):
    with DAG(f"order_{name}", schedule=None, catchup=False, tags=["pool-manager"]):
        train.override(pool_slots=slots, priority_weight=priority, executor_config=config)(
            seconds="{{ dag_run.conf.get('seconds', 5) }}"
        )
