"""The same three teams in a pools fleet: SageMaker training called directly, no AWS Batch.

Each task runs its training job through ``PoolTrainingOperator`` in the
team's Airflow pool (``dags/pools_quota.yaml``), which ``airflow-quota
pool-manager --watch-sagemaker`` sizes so the pools together never promise
more than the fleet's 8 ml.p4d.24xlarge:

- ``pools_vision_pretrain`` trains on 4 while vision owns 2: it borrows 2 idle ones;
- ``pools_nlp_finetune`` needs the 4 nlp owns: the manager reclaims vision's
  borrowed ones by clearing vision's task, whose training job is stopped; its
  next try resumes from the checkpoint once instances are free again;
- ``pools_research_release_eval`` (priority 90) preempts
  ``pools_research_sweep`` (priority 10) inside research's share.

``pool_slots`` is each job's InstanceCount (the operator's default); each DAG
run's ``conf`` may set ``work_minutes`` (the local endpoint's emulated work).
"""

from __future__ import annotations

import datetime

from airflow.providers.common.compat.sdk import DAG
from training_requests import training_request

from airflow_quota_provider.operators.sagemaker import PoolTrainingOperator

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
TEAMS = {
    # dag id: (team, purpose, instances, priority, work minutes)
    "pools_vision_pretrain": ("vision", "pretrain", 4, 50, 120),
    "pools_nlp_finetune": ("nlp", "finetune", 4, 50, 60),
    "pools_research_sweep": ("research", "sweep", 2, 10, 240),
    "pools_research_release_eval": ("research", "release-eval", 2, 90, 60),
}

for dag_id, (team, purpose, instances, priority, minutes) in TEAMS.items():
    with DAG(
        dag_id=dag_id,
        description=f"{team.capitalize()}: {purpose} on {instances} p4d in a pools fleet",
        schedule=None,
        start_date=START,
        catchup=False,
        tags=["airflow-pools", f"team:{team}"],
    ):
        PoolTrainingOperator(
            task_id=purpose.replace("-", "_"),
            pool=f"quota-{team}-p4d",
            priority_weight=priority,
            weight_rule="absolute",
            training_config=training_request(
                team, purpose, "ml.p4d.24xlarge", instances, named=False
            ),
            tags={
                "team": team,
                # read only by the local AWS endpoint: emulated work and checkpoints
                "emulator:duration-seconds": (
                    f"{{{{ (dag_run.conf.get('work_minutes', {minutes}) * 60) | int }}}}"
                ),
                "emulator:checkpoint-interval-seconds": "600",
            },
            deferrable=True,
            poll_interval=2,
        )
