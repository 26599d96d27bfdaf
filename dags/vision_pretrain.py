"""Vision pre-trains a backbone on 10 ml.p4d.24xlarge while its share owns 6.

Its share lends and borrows (``LEND_AND_BORROW``, no borrow limit), so the
job starts at once on its own 6 instances and 4 borrowed from idle capacity
of other shares. When an owner needs those 4 back, AWS Batch reclaims them:
this job is preempted, goes back to the queue and, because it checkpoints to
S3, its next attempt resumes from the last checkpoint instead of from zero.
``preemption_retries=3`` makes it fail instead of being requeued a fourth time.
"""

from __future__ import annotations

import datetime

from airflow.providers.common.compat.sdk import DAG
from training_requests import emulated_timing, training_request

from airflow_quota_provider.operators.batch import QuotaTrainingOperator

with DAG(
    dag_id="vision_pretrain",
    description="Vision: pre-train a backbone, borrowing idle p4d capacity",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    catchup=False,
    tags=["ml-training", "team:vision"],
):
    QuotaTrainingOperator(
        task_id="pretrain",
        job_queue="ml-training",
        quota_share="vision",
        priority=50,
        preemption_retries=3,
        training_config=training_request("vision", "pretrain", "ml.p4d.24xlarge", 10),
        tags={"team": "vision", **emulated_timing(work_minutes=120, checkpoint_minutes=15)},
        deferrable=True,
    )
