"""Research runs a long, low-priority sweep and, at release time, an urgent evaluation.

The research share lends its idle capacity but never borrows (``LEND``) and
has in-share preemption on: when the release evaluation (priority 9000)
arrives while the sweep (priority 10) holds all 8 of the share's
ml.g5.12xlarge, AWS Batch preempts the sweep to make room. The sweep goes
back to the queue and resumes from its last checkpoint once the evaluation
is done. Both DAGs are triggered by hand (or by a release pipeline).
"""

from __future__ import annotations

import datetime

from airflow.providers.common.compat.sdk import DAG
from training_requests import emulated_timing, training_request

from airflow_quota_provider.operators.batch import QuotaTrainingOperator

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

with DAG(
    dag_id="research_sweep",
    description="Research: a long low-priority sweep on the share's own g5 capacity",
    schedule=None,
    start_date=START,
    catchup=False,
    tags=["ml-training", "team:research"],
):
    QuotaTrainingOperator(
        task_id="sweep",
        job_queue="ml-training",
        quota_share="research",
        priority=10,
        training_config=training_request("research", "sweep", "ml.g5.12xlarge", 8),
        tags={"team": "research", **emulated_timing(work_minutes=90, checkpoint_minutes=10)},
        deferrable=True,
    )

with DAG(
    dag_id="research_release_eval",
    description="Research: an urgent release evaluation that preempts the team's own sweep",
    schedule=None,
    start_date=START,
    catchup=False,
    tags=["ml-training", "team:research"],
):
    QuotaTrainingOperator(
        task_id="release_eval",
        job_queue="ml-training",
        quota_share="research",
        priority=9000,
        training_config=training_request("research", "release-eval", "ml.g5.12xlarge", 4),
        tags={"team": "research", **emulated_timing(work_minutes=20, checkpoint_minutes=10)},
        deferrable=True,
    )
