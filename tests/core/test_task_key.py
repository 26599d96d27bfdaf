"""How a task instance names its jobs: one rule for the operators and the pool manager."""

from __future__ import annotations

import re

import pytest

from airflow_quota_provider.core.task_key import TaskKey

SAGEMAKER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


@pytest.mark.parametrize(
    "identity",
    [
        TaskKey("nlp_finetune", "manual__2026-12-03T07:00:00+00:00", "train"),
        TaskKey("a" * 250, "r" * 250, "b." * 120, 12345),
        TaskKey("__", "::", "--", -1),
    ],
    ids=["usual", "longest", "no letter or digit"],
)
def test_a_training_job_name_is_valid_for_sagemaker_and_tells_tries_apart(
    identity: TaskKey,
) -> None:
    first, second = identity.training_job_name(1), identity.training_job_name(2)
    assert SAGEMAKER_NAME.match(first) and SAGEMAKER_NAME.match(second), (first, second)
    assert first != second and first == identity.training_job_name(1)


def test_task_instances_that_read_alike_get_different_names() -> None:
    names = {
        TaskKey("d", "run_1", "train").training_job_name(1),
        TaskKey("d", "run.1", "train").training_job_name(1),
        TaskKey("d", "run_1", "train", 0).training_job_name(1),
    }
    assert len(names) == 3
    assert (
        TaskKey("nlp_finetune", "r", "train").training_job_name(3).startswith("nlp-finetune-train-")
    )
