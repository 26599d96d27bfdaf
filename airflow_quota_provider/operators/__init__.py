"""Operators: run SageMaker training through AWS Batch quota shares."""
