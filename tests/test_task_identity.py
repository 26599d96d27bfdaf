"""How a task instance names its jobs: one rule for the operators and the pool manager."""

from __future__ import annotations

import re

import pytest

from airflow_quota_provider.hooks.submission import TaskIdentity

SAGEMAKER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


@pytest.mark.parametrize(
    "identity",
    [
        TaskIdentity("nlp_finetune", "train", "manual__2026-12-03T07:00:00+00:00"),
        TaskIdentity("a" * 250, "b." * 120, "r" * 250, 12345),
        TaskIdentity("__", "--", "::", -1),
    ],
    ids=["usual", "longest", "no letter or digit"],
)
def test_a_training_job_name_is_valid_for_sagemaker_and_tells_tries_apart(
    identity: TaskIdentity,
) -> None:
    first, second = identity.training_job_name(1), identity.training_job_name(2)
    assert SAGEMAKER_NAME.match(first) and SAGEMAKER_NAME.match(second), (first, second)
    assert first != second and first == identity.training_job_name(1)


def test_task_instances_that_read_alike_get_different_names() -> None:
    names = {
        TaskIdentity("d", "train", "run_1").training_job_name(1),
        TaskIdentity("d", "train", "run.1").training_job_name(1),
        TaskIdentity("d", "train", "run_1", 0).training_job_name(1),
    }
    assert len(names) == 3
    assert (
        TaskIdentity("nlp_finetune", "train", "r")
        .training_job_name(3)
        .startswith("nlp-finetune-train-")
    )
