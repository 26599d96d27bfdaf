"""Task instances for the reconciler's tests: one that runs (and so watches its job),
and one in a paused DAG that never starts (its state is whatever the test sets)."""

from __future__ import annotations

import time

from airflow.sdk import DAG, task


@task
def train(seconds: float = 600) -> None:
    time.sleep(seconds)


with DAG("reconcile_running", schedule=None, catchup=False):
    train()

with DAG("reconcile_parked", schedule=None, catchup=False, is_paused_upon_creation=True):
    train()
