"""A vision task that holds its GPUs while it is deferred, as a task waiting on a training
job through a trigger does (tests/pool_manager/fleet.yaml): its pool must count it
(``include_deferred``). It waits ten minutes; the tests end it sooner."""

from __future__ import annotations

from datetime import timedelta

from airflow.providers.standard.sensors.time_delta import TimeDeltaSensor
from airflow.sdk import DAG

with DAG("pools_vision_deferred", schedule=None, catchup=False, tags=["pool-manager"]):
    TimeDeltaSensor(
        task_id="train",
        delta=timedelta(minutes=10),
        deferrable=True,
        pool="quota-vision-gpu",
        pool_slots=2,
        priority_weight=1,
        weight_rule="absolute",
    )
