"""A task's own settings, read back from ``executor_config`` as Airflow's REST API shows it."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.decide import Refusal, decide
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.overrides import Overrides, overrides_of
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.exceptions import Problem
from airflow_quota_provider.pool_manager.manager import PoolManager
from tests.core.builders import queue, share
from tests.pool_manager.fake_http import serving
from tests.pool_manager.test_decide import FLEET, NLP, key, task
from tests.pool_manager.test_refusal import RefusingAirflow, pool, ti

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
            str({"quota": {"preemptible": False, "min_runtime_seconds": 600}}),
            Overrides(preemptible=False, min_runtime_seconds=600.0),
            id="not preemptible, protected for 10 minutes",
        ),
        pytest.param(
            str({"quota": {"preemption_retries": None, "preemptible": True}}),
            Overrides(preemptible=True),
            id="a setting of None is the share's",
        ),
    ],
)
def test_overrides_of(executor_config: str | None, expected: Overrides) -> None:
    assert overrides_of(executor_config) == expected


ALLOWED = "allowed keys: preemption_retries, preemptible, min_runtime_seconds"


@pytest.mark.parametrize(
    ("quota", "problems"),
    [
        pytest.param(
            {"preemtible": False},
            [("preemtible", f"unknown key preemtible (did you mean preemptible?); {ALLOWED}")],
            id="an unknown key, with what it likely meant",
        ),
        pytest.param(
            {"gpus": 2},
            [("gpus", f"unknown key gpus; {ALLOWED}")],
            id="an unknown key like no known one",
        ),
        pytest.param(
            {"Preemption_Retries": None},
            [
                (
                    "Preemption_Retries",
                    "unknown key Preemption_Retries (did you mean preemption_retries?); " + ALLOWED,
                )
            ],
            id="an unknown key set to None",
        ),
        pytest.param(
            {"preemptible": "no"},
            [("preemptible", "must be true or false, got 'no'")],
            id="a flag that is a string",
        ),
        pytest.param(
            {"preemption_retries": True},
            [("preemption_retries", "must be an integer >= 0, got true")],
            id="a cap that is a boolean",
        ),
        pytest.param(
            {"preemption_retries": -1},
            [("preemption_retries", "must be an integer >= 0, got -1")],
            id="a negative cap",
        ),
        pytest.param(
            {"min_runtime_seconds": -5},
            [("min_runtime_seconds", "must be a number of seconds >= 0, got -5")],
            id="a negative protection",
        ),
        pytest.param(
            "{'min_runtime_seconds': 1e400}",  # the text Airflow shows; repr(inf) is no literal
            [("min_runtime_seconds", "must be a number of seconds >= 0, got inf")],
            id="an endless protection",
        ),
        pytest.param(
            {"preemtible": False, "preemption_retries": -1, "min_runtime_seconds": "10m"},
            [
                ("preemtible", f"unknown key preemtible (did you mean preemptible?); {ALLOWED}"),
                ("preemption_retries", "must be an integer >= 0, got -1"),
                ("min_runtime_seconds", "must be a number of seconds >= 0, got '10m'"),
            ],
            id="every problem at once, unknown keys first",
        ),
    ],
)
def test_every_problem_of_a_quota_entry_names_its_key_what_is_wrong_and_what_is_allowed(
    quota: dict[str, object] | str, problems: list[tuple[str, str]]
) -> None:
    found = overrides_of(f"{{'pod_override': None, 'quota': {quota}}}")
    expected = tuple(Problem(f"executor_config['quota'].{k}", m) for k, m in problems)
    assert found == Overrides(problems=expected)


@pytest.mark.parametrize(
    ("executor_config", "message"),
    [
        pytest.param(
            str({"quota": 2}),
            "must be a mapping of preemption_retries, preemptible, min_runtime_seconds, got 2",
            id="not a mapping",
        ),
        pytest.param(
            "{'quota': {'preemption_retries': 1",
            "could not be read: {'quota': {'preemption_retries': 1",
            id="not a literal",
        ),
    ],
)
def test_a_quota_entry_that_is_no_mapping_is_one_problem(
    executor_config: str, message: str
) -> None:
    expected = Overrides(problems=(Problem("executor_config['quota']", message),))
    assert overrides_of(executor_config) == expected


def test_a_task_whose_settings_cannot_be_read_is_failed_with_every_problem() -> None:
    quota = {"preemtible": False, "preemption_retries": -1}
    problem = overrides_of(str({"quota": quota})).problem
    bad = replace(task("bad", NLP, 1), problem=problem)
    plan = decide(FLEET, [bad, task("ok", NLP, 1)], now=10)
    assert plan.refuse == (
        Refusal(
            key("bad"),
            NLP,
            "Failed by the quota pool manager: executor_config['quota'].preemtible: unknown key "
            f"preemtible (did you mean preemptible?); {ALLOWED}; "
            "executor_config['quota'].preemption_retries: must be an integer >= 0, got -1",
        ),
    )
    assert [start.key for start in plan.start] == [key("ok")]


def test_every_problem_reaches_the_failed_tasks_note_and_the_managers_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    quota = {"preemtible": False, "preemption_retries": -1}
    with serving(RefusingAirflow()) as airflow:
        fleet = Fleet.of(queue(share("own").capacity(gpu=4).lend_and_borrow(), gpu=4))
        own = fleet.pool_of("own", "gpu")
        airflow.pools = {own: pool(own, 0, fleet)}
        airflow.tis = [
            {**ti("own", own, 1, "scheduled", None), "executor_config": str({"quota": quota})}
        ]
        gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
        store = Store(f"sqlite:///{tmp_path / 'pm.db'}")
        manager = PoolManager(fleet, gateway, store, clock=lambda: 1_796_400_000.0)
        with caplog.at_level(logging.WARNING):
            manager.cycle()
    note = (
        "Failed by the quota pool manager: executor_config['quota'].preemtible: unknown key "
        f"preemtible (did you mean preemptible?); {ALLOWED}; "
        "executor_config['quota'].preemption_retries: must be an integer >= 0, got -1"
    )
    assert airflow.patched == [{"new_state": "failed", "note": note}]
    assert f"failing own/r1/train: {note}" in [r.getMessage() for r in caplog.records]
