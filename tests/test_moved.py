"""Old import paths of the operators and triggers still work, with a deprecation warning,
and a trigger row written under an old classpath resumes as the class's new home."""

from __future__ import annotations

import importlib
import sys

import pytest
from airflow.exceptions import AirflowProviderDeprecationWarning

from airflow_quota_provider.moved import MOVED
from airflow_quota_provider.triggers.batch import ServiceJobTrigger

CLASSES = {
    "airflow_quota_provider.operators.training": "QuotaTrainingOperator",
    "airflow_quota_provider.operators.pool_training": "PoolTrainingOperator",
    "airflow_quota_provider.triggers.service_job": "ServiceJobTrigger",
    "airflow_quota_provider.triggers.training_job": "TrainingJobTrigger",
}


def test_every_moved_module_names_its_class() -> None:
    assert set(CLASSES) == set(MOVED)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_gives_the_same_class(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(AirflowProviderDeprecationWarning, match=f"import from {MOVED[old]}"):
        module = importlib.import_module(old)
    name = CLASSES[old]
    assert getattr(module, name) is getattr(importlib.import_module(MOVED[old]), name)


def test_a_trigger_row_with_an_old_classpath_resumes_and_is_written_anew() -> None:
    sys.modules.pop("airflow_quota_provider.triggers.service_job", None)
    module, _, name = "airflow_quota_provider.triggers.service_job.ServiceJobTrigger".rpartition(
        "."
    )
    with pytest.warns(AirflowProviderDeprecationWarning):
        cls = getattr(importlib.import_module(module), name)
    trigger = cls(job_id="job-1", job_queue="gpus")
    assert isinstance(trigger, ServiceJobTrigger)
    classpath, _ = trigger.serialize()
    assert classpath == "airflow_quota_provider.triggers.batch.ServiceJobTrigger"
