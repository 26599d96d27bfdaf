"""The pool manager benchmark's DAGs (benchmarks/pool_manager.py).

``pool_bench``: one task per managed pool of the 20-share fleet; its task
instances are only read (no scheduler runs them), their states and sizes set by
the benchmark. ``reclaim_borrower`` and ``reclaim_owner``: two teams of a 4-GPU
fleet, for the reclaim latency, holding their GPUs for ``seconds`` (run conf).
"""

from __future__ import annotations

import time

from airflow.sdk import DAG, task

SHARES = 20


@task(weight_rule="absolute")
def hold(seconds: str | float = 5.0) -> None:
    time.sleep(float(seconds))


with DAG("pool_bench", schedule=None, catchup=False, is_paused_upon_creation=True):
    for n in range(SHARES):
        hold.override(task_id=f"t{n:02d}", pool=f"quota-team-{n:02d}-gpu")()

for team, slots in (("borrower", 4), ("owner", 2)):
    share = "vision" if team == "borrower" else "nlp"
    with DAG(f"reclaim_{team}", schedule=None, catchup=False):
        hold.override(pool=f"quota-{share}-gpu", pool_slots=slots, priority_weight=1)(
            seconds="{{ dag_run.conf.get('seconds', 5) }}"
        )
