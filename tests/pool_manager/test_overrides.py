"""A task's own settings, read back from ``executor_config`` as Airflow's REST API shows it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from airflow_quota_provider.pool_manager.decide import Refusal, decide
from airflow_quota_provider.pool_manager.overrides import Overrides, overrides_of
from tests.pool_manager.test_decide import FLEET, NLP, key, task

POD = "{'api_version': None, 'kind': None, 'spec': {'containers': [{'name': 'base'}]}}"
"""What a V1Pod's repr looks like: a dict of literals (pprint of its to_dict())."""


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque object at 0x7f>"


@pytest.mark.parametrize(
    ("executor_config", "expected"),
    [
        pytest.param(None, Overrides(), id="none"),
        pytest.param("{}", Overrides(), id="empty"),
        pytest.param(str({"pod_override": None}), Overrides(), id="other keys only"),
        pytest.param(
            str({"quota": {"preemption_retries": 0}}),
            Overrides(preemption_retries=0),
            id="a cap of 0",
        ),
        pytest.param(
            "{'pod_override': " + POD + ", 'quota': {'preemption_retries': 3}}",
            Overrides(preemption_retries=3),
            id="beside a pod override",
        ),
        pytest.param(
            str({"pod_override": Opaque(), "quota": {"preemption_retries": 2}}),
            Overrides(preemption_retries=2),
            id="beside an object that is no literal",
        ),
        pytest.param(
            str({"quota": {"preemption_retries": -1}}),
            Overrides(
                problem="executor_config['quota']['preemption_retries'] must be an integer "
                ">= 0, got -1"
            ),
            id="a negative cap",
        ),
        pytest.param(
            str({"quota": {"preemption_retries": True}}),
            Overrides(
                problem="executor_config['quota']['preemption_retries'] must be an integer "
                ">= 0, got true"
            ),
            id="a boolean cap",
        ),
        pytest.param(
            str({"quota": {"preemptible": False, "min_runtime_seconds": 600}}),
            Overrides(preemptible=False, min_runtime_seconds=600.0),
            id="not preemptible, protected for 10 minutes",
        ),
        pytest.param(
            str({"quota": {"preemptable": False}}),
            Overrides(
                problem="executor_config['quota'] has unknown keys preemptable; "
                "allowed: preemption_retries, preemptible, min_runtime_seconds"
            ),
            id="an unknown setting",
        ),
        pytest.param(
            str({"quota": {"preemptible": "no", "min_runtime_seconds": -5}}),
            Overrides(
                problem="executor_config['quota']['preemptible'] must be True or False, got "
                "'no'; executor_config['quota']['min_runtime_seconds'] must be a number of "
                "seconds >= 0, got -5"
            ),
            id="every bad value at once",
        ),
        pytest.param(
            "{'quota': {'min_runtime_seconds': 1e400}}",
            Overrides(
                problem="executor_config['quota']['min_runtime_seconds'] must be a number of "
                "seconds >= 0, got inf"
            ),
            id="an endless protection",
        ),
        pytest.param(
            str({"quota": 2}),
            Overrides(problem="executor_config['quota'] must be a mapping, got 2"),
            id="not a mapping",
        ),
    ],
)
def test_overrides_of(executor_config: str | None, expected: Overrides) -> None:
    assert overrides_of(executor_config) == expected


def test_a_task_whose_settings_cannot_be_read_is_failed_with_the_problem() -> None:
    bad = replace(task("bad", NLP, 1), problem="executor_config['quota'] must be a mapping")
    plan = decide(FLEET, [bad, task("ok", NLP, 1)], now=10)
    assert plan.refuse == (
        Refusal(
            key("bad"),
            NLP,
            "Failed by the quota pool manager: executor_config['quota'] must be a mapping",
        ),
    )
    assert [start.key for start in plan.start] == [key("ok")]
