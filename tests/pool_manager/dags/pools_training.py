"""Three teams' SageMaker training tasks in a pools fleet counted in p4d instances.

Each task runs one training job per try through ``PoolTrainingOperator``
against the local endpoint (whose ``--instance-limit`` is the account's limit),
checkpointing every minute of training to its own S3 location, so a preempted
try's successor resumes. Small tasks wait in the worker, the others deferred:
both ways of stopping a job on preemption run.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_quota_provider.operators.pool_training import PoolTrainingOperator

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


for team, tasks in TASKS.items():
    with DAG(f"training_{team}", schedule=None, catchup=False, tags=["pool-manager"]):
        for task_id, instances, weight in tasks:
            PoolTrainingOperator(
                task_id=task_id,
                training_config=request(instances),
                pool=f"quota-{team}-p4d",
                priority_weight=weight,
                weight_rule="absolute",
                deferrable=task_id != "small",
                poll_interval=1,
                stop_wait_seconds=60,
                retries=0,
                retry_delay=datetime.timedelta(seconds=1),
            )
