"""Stopping the external jobs no task watches any more (orphans), for both backends.

:mod:`airflow_quota_provider.core.orphans` decides; here are the jobs (AWS Batch
service jobs and SageMaker training jobs carrying our ``airflow:*`` tags), the
task instances they name (read through Airflow's REST API) and the loop that
stops them. It runs inside the pool manager (``--watch-sagemaker``) and as
``airflow-quota reconcile``.
"""
