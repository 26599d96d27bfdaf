"""Reading a sync file: the quota config plus the AWS names, every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_quota_provider.exceptions import ConfigError, Problem
from airflow_quota_provider.sync.target import SyncTarget, load_target, parse_target

CONFIG = {
    "job_queue": "ml-training",
    "capacity": {"gpu": 4},
    "shares": [{"name": "nlp", "capacity": {"gpu": 4}}],
}


def test_the_names_default_to_those_the_emulator_creates() -> None:
    target = parse_target(CONFIG)
    assert isinstance(target, SyncTarget)
    assert (target.service_environment, target.scheduling_policy, target.job_queue_priority) == (
        "ml-training-env",
        "ml-training-policy",
        1,
    )


def test_the_names_can_be_given() -> None:
    target = parse_target(
        {
            **CONFIG,
            "service_environment": "pool",
            "scheduling_policy": "qs",
            "job_queue_priority": 0,
        }
    )
    assert isinstance(target, SyncTarget)
    assert (target.service_environment, target.scheduling_policy, target.job_queue_priority) == (
        "pool",
        "qs",
        0,
    )


@pytest.mark.parametrize(
    ("extra", "want"),
    [
        (
            {"scheduling_policy": 7},
            Problem(
                "scheduling_policy",
                "must be a scheduling policy name of 1 to 128 letters, digits, hyphens (-) and "
                "underscores (_), got 7",
            ),
        ),
        (
            {"job_queue_priority": True},
            Problem(
                "job_queue_priority",
                "must be an integer from 0 to 1000 (the job queue's priority), got true",
            ),
        ),
        (
            {"service_enviroment": "pool"},
            Problem(
                "service_enviroment",
                "unknown key service_enviroment (did you mean service_environment?); allowed "
                "keys: backend, job_queue, capacity, idle_assignment, min_runtime_seconds, "
                "victim_order, shares, pools, history_days, service_environment, "
                "scheduling_policy, job_queue_priority",
            ),
        ),
    ],
    ids=["a policy name that is a number", "a priority that is a boolean", "a misspelt key"],
)
def test_a_wrong_name_key_is_a_problem_at_its_path(extra: dict[str, object], want: Problem) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_target({**CONFIG, **extra})
    assert raised.value.problems == (want,)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_target(tmp_path / "missing.yaml")
    assert raised.value.problems == (Problem("", "no such file"),)
