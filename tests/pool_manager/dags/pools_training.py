"""Three teams' SageMaker training tasks in a pools fleet counted in p4d instances.

Each task runs one training job per try through ``PoolTrainingOperator``
against the local endpoint (whose ``--instance-limit`` is the account's limit),
checkpointing every minute of training to its own S3 location, so a preempted
try's successor resumes. Small tasks wait in the worker, the others deferred:
both ways of stopping a job on preemption run.

The ``celery_training_*`` DAGs run on the CeleryExecutor, each team's tasks on its
own queue (``team-a``, ...), in the pools of the teams' training shares of a fleet
that also has GPUs (``fleet_celery.yaml``): one task waiting in the worker, one
deferred. They have the retries of the ``celery_locks_*`` DAGs (``pools_locks.py``):
a try whose worker is killed is failed by the scheduler once its heartbeat stops, and
only a retry (which first stops that try's training job) finishes it.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_quota_provider.operators.sagemaker import PoolTrainingOperator

RETRIES = 5  # as the celery_locks_* DAGs' (pools_locks.py), for the same reasons
RETRY_DELAY = datetime.timedelta(seconds=10)

TASKS = {
    # team: [(task id, instances, priority_weight)]
    "a": [("small", 1, 1), ("medium", 2, 5), ("large", 4, 10)],
    "b": [("small", 1, 1), ("medium", 2, 5), ("large", 2, 10)],
    "c": [("small", 1, 1), ("pair", 2, 5), ("urgent", 2, 10)],
}


def request(instances: int) -> dict[str, object]:
    return {
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "image:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {
            "InstanceType": "ml.p4d.24xlarge",
            "InstanceCount": instances,
            "VolumeSizeInGB": 50,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "CheckpointConfig": {
            "S3Uri": "s3://bucket/checkpoints/{{ dag.dag_id }}/{{ run_id }}/{{ task.task_id }}"
        },
        "Tags": [
            {"Key": "emulator:duration-seconds", "Value": "{{ dag_run.conf.get('seconds', 600) }}"},
            {"Key": "emulator:checkpoint-interval-seconds", "Value": "60"},
        ],
    }


def training_dag(dag_id: str, tasks: list[tuple[str, int, int]], pool: str, **more: Any) -> None:
    """A DAG of one training task per (task id, instances, priority weight), in ``pool``;
    ``more``: the tasks' other arguments."""
    with DAG(dag_id, schedule=None, catchup=False, tags=["pool-manager"]):
        for task_id, instances, weight in tasks:
            PoolTrainingOperator(
                task_id=task_id,
                training_config=request(instances),
                pool=pool,
                priority_weight=weight,
                weight_rule="absolute",
                deferrable=task_id != "small",
                poll_interval=1,
                stop_wait_seconds=60,
                **more,
            )


for team, tasks in TASKS.items():
    training_dag(
        f"training_{team}",
        tasks,
        f"quota-{team}-p4d",
        retries=0,
        retry_delay=datetime.timedelta(seconds=1),
    )

for team in TASKS:
    training_dag(
        f"celery_training_{team}",
        [("small", 1, 1), ("pair", 2, 5)],
        f"quota-{team}-train-p4d",
        queue=f"team-{team}",
        retries=RETRIES,
        retry_delay=RETRY_DELAY,
    )
