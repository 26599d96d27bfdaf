"""QuotaCapacitySensor on the pools fleet of tests/pool_manager/fleet.yaml (nlp and vision
own 2 of 4 GPUs each, lending and borrowing).

Each waiting DAG waits for GPUs in share nlp, then runs an nlp task that takes them.
"""

from __future__ import annotations

import time
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_quota_provider.sensors.capacity import QuotaCapacitySensor

FLEET = str(Path(__file__).resolve().parents[1] / "fleet.yaml")
BATCH_CONFIG = str(Path(__file__).resolve().parents[3] / "dags" / "quota.yaml")
"""The example config of an AWS Batch job queue: no pools fleet."""


@task(weight_rule="absolute")
def train(seconds: float = 1.0) -> None:
    time.sleep(seconds)


# deferred, the fleet named: 3 GPUs are nlp's own 2 and 1 borrowed from vision
with DAG("pools_capacity_deferred", schedule=None, catchup=False, tags=["pool-manager"]):
    wait = QuotaCapacitySensor(
        task_id="wait",
        fleet_config=FLEET,
        quota_share="nlp",
        capacity={"gpu": 3},
        deferrable=True,
        poll_interval=1,
        timeout=600,
    )
    wait >> train.override(pool="quota-nlp-gpu", pool_slots=3)()

# poking, the fleet of the GPU Quotas page ([quota_provider] view_fleet_config)
with DAG("pools_capacity_poking", schedule=None, catchup=False, tags=["pool-manager"]):
    wait = QuotaCapacitySensor(
        task_id="wait",
        quota_share="nlp",
        capacity={"gpu": 2},
        deferrable=False,
        poll_interval=1,
        timeout=600,
    )
    wait >> train.override(pool="quota-nlp-gpu", pool_slots=2)()

# sensors that could never succeed: each fails with what is wrong
with DAG("pools_capacity_refused", schedule=None, catchup=False, tags=["pool-manager"]):
    for task_id, share, capacity in (
        ("unknown_share", "robotics", {"gpu": 1}),
        ("too_much", "nlp", {"gpu": 5}),
        ("unknown_unit", "nlp", {"tpu": 1}),
    ):
        # retries are there to show they are not used
        QuotaCapacitySensor(
            task_id=task_id,
            fleet_config=FLEET,
            quota_share=share,
            capacity=capacity,
            retries=2,
            deferrable=True,
        )
    QuotaCapacitySensor(
        task_id="wrong_backend", fleet_config=BATCH_CONFIG, quota_share="nlp", capacity={"gpu": 1}
    )
    QuotaCapacitySensor(
        task_id="no_connection",
        fleet_config=FLEET,
        airflow_api_conn_id="no_such_api",
        quota_share="nlp",
        capacity={"gpu": 1},
        deferrable=True,
    )
