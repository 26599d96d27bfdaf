"""NLP fine-tunes a language model on all 8 ml.p4d.24xlarge its share owns.

When this job arrives, another share may be borrowing part of NLP's
capacity. NLP does not wait for it: AWS Batch reclaims the lent instances by
preempting the borrowing job, and this job starts on what NLP owns. A job
running within what its own share owns is never preempted by another share.
"""

from __future__ import annotations

import datetime

from airflow.providers.common.compat.sdk import DAG
from training_requests import emulated_timing, training_request

from airflow_quota_provider.operators.batch import QuotaTrainingOperator

with DAG(
    dag_id="nlp_finetune",
    description="NLP: fine-tune on the share's own p4d capacity, reclaiming it if lent",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    catchup=False,
    tags=["ml-training", "team:nlp"],
):
    QuotaTrainingOperator(
        task_id="finetune",
        job_queue="ml-training",
        quota_share="nlp",
        priority=50,
        training_config=training_request("nlp", "finetune", "ml.p4d.24xlarge", 8),
        tags={"team": "nlp", **emulated_timing(work_minutes=60, checkpoint_minutes=15)},
        deferrable=True,
    )
