"""Deferred tasks of every trigger kind of the provider, for tests/airflow/test_triggerer_load.py.

The pools fleet is ``fleet.yaml`` (24 p4d: nlp and vision own 12 each), the AWS Batch
job queue ``batch.yaml`` on the local endpoint (4 g5: nlp and vision own 2 each), whose
capacity the test takes first with jobs of its own. Nothing here ends during the test:
every training job trains for hours of the endpoint's clock and every sensor waits for
capacity that stays taken.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from airflow_quota_provider.operators.batch import QuotaTrainingOperator
from airflow_quota_provider.operators.sagemaker import PoolTrainingOperator
from airflow_quota_provider.sensors.capacity import QuotaCapacitySensor

HERE = Path(__file__).resolve().parent
FLEET = str(HERE / "fleet.yaml")
JOB_QUEUE = "ml-training"
G5 = "ml.g5.12xlarge"
TASKS = 20
"""Deferred tasks per trigger kind."""
VISION_TRAINING = 24
"""Vision's training tasks: all 24 p4d of the fleet, 12 of them borrowed from nlp."""
RECLAIMING = 4
"""The p4d of nlp's training task, which the pool manager takes back from vision."""
POLL = 2.0
HOURS = str(10 * 3600)
"""Emulated seconds of training: far beyond the test at the endpoint's 60x clock."""
WAIT = 3600


def training_request(instance_type: str, instances: int, **more: Any) -> dict[str, Any]:
    """A SageMaker ``CreateTrainingJob`` request that trains for :data:`HOURS` emulated seconds."""
    return {
        **more,
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "image:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {
            "InstanceType": instance_type,
            "InstanceCount": instances,
            "VolumeSizeInGB": 50,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "CheckpointConfig": {
            "S3Uri": "s3://bucket/checkpoints/{{ dag.dag_id }}/{{ run_id }}/{{ task.task_id }}"
        },
        "Tags": [{"Key": "emulator:duration-seconds", "Value": HOURS}],
    }


def load_dag(dag_id: str) -> DAG:
    return DAG(dag_id, schedule=None, catchup=False, max_active_tasks=64, tags=["load"])


# the pools fleet's sensors: nlp never has 5 p4d free while vision holds the fleet
with load_dag("load_pools_sensor"):
    for number in range(TASKS):
        QuotaCapacitySensor(
            task_id=f"wait_{number}",
            fleet_config=FLEET,
            quota_share="nlp",
            capacity={"p4d": 5},
            deferrable=True,
            poll_interval=POLL,
            timeout=WAIT,
        )

# the Batch queue's sensors: the test's own jobs hold all 4 g5
with load_dag("load_batch_sensor"):
    for number in range(TASKS):
        QuotaCapacitySensor(
            task_id=f"wait_{number}",
            job_queue=JOB_QUEUE,
            quota_share="nlp",
            capacity={G5: 1},
            deferrable=True,
            poll_interval=POLL,
            timeout=WAIT,
        )

# service jobs that wait RUNNABLE behind the test's own jobs: one poller follows them all
with load_dag("load_service_jobs"):
    for number in range(TASKS):
        QuotaTrainingOperator(
            task_id=f"train_{number}",
            job_queue=JOB_QUEUE,
            quota_share="vision",
            training_config=training_request(G5, 1, TrainingJobName=f"load-{number}"),
            tags={"emulator:duration-seconds": HOURS},
            deferrable=True,
            poll_interval=POLL,
        )

# SageMaker training in the pools fleet: vision takes all 24 p4d, borrowing nlp's 12
with load_dag("load_training_vision"):
    for number in range(VISION_TRAINING):
        PoolTrainingOperator(
            task_id=f"train_{number}",
            training_config=training_request("ml.p4d.24xlarge", 1),
            pool="quota-vision-p4d",
            priority_weight=1,
            weight_rule="absolute",
            deferrable=True,
            poll_interval=POLL,
            stop_wait_seconds=30,
        )

# nlp takes back 4 of its p4d: the pool manager clears 4 of vision's deferred tasks
with load_dag("load_training_nlp"):
    PoolTrainingOperator(
        task_id="train",
        training_config=training_request("ml.p4d.24xlarge", RECLAIMING),
        pool="quota-nlp-p4d",
        priority_weight=10,
        weight_rule="absolute",
        deferrable=True,
        poll_interval=POLL,
        stop_wait_seconds=30,
    )
