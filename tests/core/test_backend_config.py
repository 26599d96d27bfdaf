"""A config's backend and, for airflow_pools, its pools: every problem at once, by path."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_quota_provider.core.config import config_to_dict, parse_config
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.exceptions import ConfigError

FLEET: dict[str, Any] = {
    "backend": "airflow_pools",
    "job_queue": "gpus",
    "capacity": {"gpu": 8, "nvidia-a100": 4},
    "shares": [
        {"name": "nlp", "capacity": {"gpu": 4, "nvidia-a100": 2}},
        {"name": "vision", "capacity": {"gpu": 4}},
    ],
}


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return [(p.path, p.message) for p in caught.value.problems]


def test_a_pools_fleet_names_some_pools_and_round_trips() -> None:
    data = {**FLEET, "pools": {"nlp": {"gpu": "nlp-gpus"}}}
    config = parse_config(data)
    assert config.backend is Backend.AIRFLOW_POOLS
    assert config.pools == {"nlp": {"gpu": "nlp-gpus"}}
    assert parse_config(config_to_dict(config)) == config


def test_a_pools_share_caps_the_preemptions_of_its_tasks() -> None:
    shares = [{**FLEET["shares"][0], "preemption_retries": 2}, FLEET["shares"][1]]
    config = parse_config({**FLEET, "shares": shares})
    nlp = config.share("nlp")
    assert nlp is not None and nlp.preemption_retries == 2
    assert parse_config(config_to_dict(config)) == config


def test_a_pools_share_may_say_its_tasks_are_not_preemptible() -> None:
    shares = [{**FLEET["shares"][0], "preemptible": False}, FLEET["shares"][1]]
    config = parse_config({**FLEET, "shares": shares})
    nlp, vision = config.shares
    assert (nlp.preemptible, vision.preemptible) == (False, True)
    assert parse_config(config_to_dict(config)) == config
    assert problems({**FLEET, "backend": "aws_batch", "shares": shares}) == [
        (
            "shares[0].preemptible",
            "preemptible of a share is for backend airflow_pools; with aws_batch AWS Batch "
            "may preempt any job of a share",
        )
    ]
    shares = [{**FLEET["shares"][0], "preemptible": "no"}, FLEET["shares"][1]]
    assert problems({**FLEET, "shares": shares}) == [
        ("shares[0].preemptible", "must be true or false, got 'no'")
    ]


def test_the_default_backend_is_aws_batch_and_is_left_out_of_the_file_shape() -> None:
    data = {key: value for key, value in FLEET.items() if key != "backend"}
    config = parse_config(data)
    assert config.backend is Backend.AWS_BATCH
    assert "backend" not in config_to_dict(config)


def test_a_share_cap_on_preemptions_is_for_pools_only_and_a_count() -> None:
    shares = [{**FLEET["shares"][0], "preemption_retries": 1}, FLEET["shares"][1]]
    assert problems({**FLEET, "backend": "aws_batch", "shares": shares}) == [
        (
            "shares[0].preemption_retries",
            "preemption_retries of a share is for backend airflow_pools; with aws_batch each "
            "job sets it (preemptionRetriesBeforeTermination)",
        )
    ]
    shares = [{**FLEET["shares"][0], "preemption_retries": -1}, FLEET["shares"][1]]
    ((path, message),) = problems({**FLEET, "shares": shares})
    assert path == "shares[0].preemption_retries"
    assert message == "must be an integer >= 0, got -1"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"backend": "pools"},
            [("backend", "must be one of aws_batch, airflow_pools, got 'pools'")],
            id="an unknown backend",
        ),
        pytest.param(
            {"backend": "aws_batch", "pools": {"nlp": {"gpu": "x"}}},
            [
                (
                    "pools",
                    "pools is only allowed with backend airflow_pools; "
                    "this config's backend is aws_batch",
                )
            ],
            id="pools with aws_batch",
        ),
        pytest.param(
            {"pools": ["nlp-gpus"]},
            [("pools", "must map share names to {unit: pool name}, got a list")],
            id="pools not a mapping",
        ),
        pytest.param(
            {
                "pools": {
                    "speech": {"gpu": "a"},
                    "nlp": {"tpu": "b", "gpu": "", "nvidia-a100": "default_pool"},
                    "vision": "v",
                }
            },
            [
                ("pools.speech", "no share speech; the shares are nlp, vision"),
                ("pools.nlp.tpu", "no unit tpu; the units are gpu, nvidia-a100"),
                (
                    "pools.nlp.gpu",
                    "must be an Airflow pool name of 1 to 256 characters, got ''",
                ),
                (
                    "pools.nlp.nvidia-a100",
                    "default_pool is Airflow's own; name a pool for the share",
                ),
                ("pools.vision", "must map units to pool names, got 'v'"),
            ],
            id="every problem of the pools at once",
        ),
        pytest.param(
            {"pools": {"nlp": {"gpu": "shared"}, "vision": {"gpu": "shared"}}},
            [
                (
                    "pools.vision.gpu",
                    "pool shared would hold both gpu of share nlp and gpu of share vision",
                )
            ],
            id="two shares in one pool",
        ),
        pytest.param(
            {"pools": {"nlp": {"gpu": "quota-vision-gpu"}}},
            [
                (
                    "pools",
                    "pool quota-vision-gpu would hold both gpu of share nlp "
                    "and gpu of share vision",
                )
            ],
            id="a named pool taking another share's default",
        ),
    ],
)
def test_backend_problems(changes: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert problems({**FLEET, **changes}) == expected
