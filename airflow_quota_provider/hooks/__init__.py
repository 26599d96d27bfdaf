"""Hooks: the AWS Batch quota-share API through Airflow's AWS connection."""
