"""The SageMaker ``CreateTrainingJob`` requests of the example DAGs.

Kept in one place so each team's DAG shows only what differs: the share, the
priority and the instances. Templated fields (``{{ run_id }}``) give every
DAG run its own checkpoint folder, so a preempted job resumes from its own
checkpoints and not from another run's.
"""

from __future__ import annotations

from typing import Any

ROLE_ARN = "arn:aws:iam::123456789012:role/SageMakerTrainingRole"
BUCKET = "s3://ml-training-example"


def training_request(
    team: str,
    purpose: str,
    instance_type: str,
    instance_count: int,
    *,
    max_hours: int = 24,
    named: bool = True,
) -> dict[str, Any]:
    """A training job that checkpoints to S3, so a preempted attempt resumes where it stopped.

    ``named=False`` leaves out ``TrainingJobName``, for ``PoolTrainingOperator``,
    which names each try's job itself.
    """
    run_folder = f"{BUCKET}/{team}/{purpose}/{{{{ run_id | replace(':', '-') }}}}"
    name = {"TrainingJobName": f"{team}-{purpose}"} if named else {}
    return {
        **name,
        "RoleArn": ROLE_ARN,
        "AlgorithmSpecification": {
            "TrainingImage": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/{team}-train:latest",
            "TrainingInputMode": "FastFile",
        },
        "InputDataConfig": [
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": f"{BUCKET}/{team}/data/",
                    }
                },
            }
        ],
        "OutputDataConfig": {"S3OutputPath": f"{run_folder}/output/"},
        "CheckpointConfig": {"S3Uri": f"{run_folder}/checkpoints/"},
        "ResourceConfig": {
            "InstanceType": instance_type,
            "InstanceCount": instance_count,
            "VolumeSizeInGB": 200,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": max_hours * 3600},
    }


def emulated_timing(work_minutes: int, checkpoint_minutes: int) -> dict[str, str]:
    """Tags read only by the local AWS endpoint: how long the job trains and how often it saves.

    On AWS they are ordinary tags; the training image decides both there. The
    names are written out rather than imported from the endpoint's package, so
    the DAGs import nothing that exists only for local runs.
    """
    return {
        "emulator:duration-seconds": str(work_minutes * 60),
        "emulator:checkpoint-interval-seconds": str(checkpoint_minutes * 60),
    }
