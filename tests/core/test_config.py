"""The quota config: one table case per rule, problems checked word for word."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from airflow_quota_provider.core.config import (
    check_demand,
    check_priority,
    config_to_dict,
    parse_config,
    share_from_mapping,
    update_share,
)
from airflow_quota_provider.core.model import (
    IdleAssignment,
    QueueConfig,
    Share,
    ShareState,
    Sharing,
    VictimOrder,
)
from airflow_quota_provider.exceptions import ConfigError, Problem
from tests.core.builders import queue, share

P4D = "ml.p4d.24xlarge"
G5 = "ml.g5.12xlarge"
DROP = object()
"""A key to remove from the base config."""

NAME_RULE = "1 to 128 letters, digits, hyphens (-) and underscores (_)"
UNIT_RULE = (
    "1 to 64 letters, digits, dots (.), hyphens (-) and underscores (_), "
    "such as ml.p4d.24xlarge or gpu"
)
SHARE_KEYS = (
    "name, capacity, sharing, borrow_limit, in_share_preemption, state, weight, "
    "min_runtime_seconds, preemption_retries, preemptible"
)
QUEUE_KEYS = (
    "backend, job_queue, capacity, idle_assignment, min_runtime_seconds, victim_order, shares, "
    "pools, history_days"
)

BASE: dict[str, Any] = {
    "job_queue": "ml-training",
    "capacity": {P4D: 16, G5: 32},
    "shares": [
        {"name": "nlp", "capacity": {P4D: 8}},
        {"name": "research", "capacity": {P4D: 2, G5: 8}, "sharing": "LEND"},
    ],
}


def config(**changes: Any) -> dict[str, Any]:
    """The valid base config with top-level keys changed (``DROP`` removes one)."""
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is DROP:
            del data[key]
        else:
            data[key] = value
    return data


def with_share(index: int, **changes: Any) -> dict[str, Any]:
    """The valid base config with keys of ``shares[index]`` changed."""
    data = config()
    item = data["shares"][index]
    for key, value in changes.items():
        if value is DROP:
            del item[key]
        else:
            item[key] = value
    return data


def problems_of(data: object, **kwargs: Any) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as raised:
        parse_config(data, **kwargs)
    return [(p.path, p.message) for p in raised.value.problems]


# --- valid configs ---------------------------------------------------------------------

FULL = {
    "job_queue": "ml-training",
    "capacity": {P4D: 16, G5: 32},
    "idle_assignment": "FAIR",
    "min_runtime_seconds": 600,
    "victim_order": "least_work_lost",
    "shares": [
        {
            "name": "nlp",
            "capacity": {P4D: 8},
            "sharing": "LEND_AND_BORROW",
            "borrow_limit": 100,
            "in_share_preemption": True,
            "state": "ENABLED",
            "weight": 2,
            "min_runtime_seconds": 300.5,
        },
        {"name": "vision", "capacity": {P4D: 6, G5: 16}},
        {"name": "research", "capacity": {P4D: 2, G5: 0}, "sharing": "LEND", "state": "DISABLED"},
        {"name": "prod-inference-eval", "capacity": {G5: 8}, "sharing": "RESERVE"},
    ],
}

FULL_CONFIG = QueueConfig(
    job_queue="ml-training",
    capacity={P4D: 16, G5: 32},
    shares=(
        Share(
            name="nlp",
            capacity={P4D: 8},
            sharing=Sharing.LEND_AND_BORROW,
            borrow_limit=100,
            in_share_preemption=True,
            state=ShareState.ENABLED,
            weight=2.0,
            min_runtime_seconds=300.5,
        ),
        Share(name="vision", capacity={P4D: 6, G5: 16}),
        Share(
            name="research",
            capacity={P4D: 2, G5: 0},
            sharing=Sharing.LEND,
            state=ShareState.DISABLED,
        ),
        Share(name="prod-inference-eval", capacity={G5: 8}, sharing=Sharing.RESERVE),
    ),
    idle_assignment=IdleAssignment.FAIR,
    min_runtime_seconds=600.0,
    victim_order=VictimOrder.LEAST_WORK_LOST,
)


def test_a_full_config_parses_to_the_expected_queue_config() -> None:
    assert parse_config(FULL) == FULL_CONFIG


def test_left_out_keys_take_their_defaults() -> None:
    assert parse_config(config()) == QueueConfig(
        job_queue="ml-training",
        capacity={P4D: 16, G5: 32},
        shares=(
            Share(
                name="nlp",
                capacity={P4D: 8},
                sharing=Sharing.LEND_AND_BORROW,
                borrow_limit=-1,
                in_share_preemption=False,
                state=ShareState.ENABLED,
                weight=1.0,
                min_runtime_seconds=None,
            ),
            Share(name="research", capacity={P4D: 2, G5: 8}, sharing=Sharing.LEND),
        ),
        idle_assignment=IdleAssignment.FIFO,
        min_runtime_seconds=None,
        victim_order=VictimOrder.MOST_RECENT,
    )


def test_extra_keys_are_allowed_and_ignored() -> None:
    data = config(jobs=[{"whatever": 1}], events="not even a list")
    assert parse_config(data, extra_keys=("jobs", "events")) == parse_config(config())


def test_shares_may_own_exactly_the_queue_capacity_and_a_share_may_own_nothing() -> None:
    data = config(
        capacity={"gpu": 8},
        shares=[
            {"name": "a", "capacity": {"gpu": 8}},
            {"name": "b", "capacity": {"gpu": 0}},
        ],
    )
    assert parse_config(data).shares[1] == Share(name="b", capacity={"gpu": 0})


@pytest.mark.parametrize(
    "config_",
    [
        pytest.param(FULL_CONFIG, id="a config with every key set"),
        pytest.param(parse_config(config()), id="a config with defaults"),
        pytest.param(
            queue(
                share("nlp").capacity(gpu=8).lend_and_borrow(limit=100).in_share_preemption(),
                share("cv").capacity(gpu=4).lend().min_runtime(120),
                share("eval").capacity(gpu=4).reserve().disabled().weight(0.5),
                gpu=16,
            ),
            id="a config made by the core test builders",
        ),
    ],
)
def test_config_to_dict_round_trips(config_: QueueConfig) -> None:
    assert parse_config(config_to_dict(config_)) == config_


def test_config_to_dict_gives_the_file_shape() -> None:
    assert config_to_dict(FULL_CONFIG) == {
        "job_queue": "ml-training",
        "capacity": {P4D: 16, G5: 32},
        "idle_assignment": "FAIR",
        "victim_order": "least_work_lost",
        "min_runtime_seconds": 600,
        "shares": [
            {
                "name": "nlp",
                "capacity": {P4D: 8},
                "sharing": "LEND_AND_BORROW",
                "borrow_limit": 100,
                "in_share_preemption": True,
                "state": "ENABLED",
                "weight": 2,
                "min_runtime_seconds": 300.5,
            },
            {
                "name": "vision",
                "capacity": {P4D: 6, G5: 16},
                "sharing": "LEND_AND_BORROW",
                "borrow_limit": -1,
                "in_share_preemption": False,
                "state": "ENABLED",
                "weight": 1,
            },
            {
                "name": "research",
                "capacity": {P4D: 2, G5: 0},
                "sharing": "LEND",
                "in_share_preemption": False,
                "state": "DISABLED",
                "weight": 1,
            },
            {
                "name": "prod-inference-eval",
                "capacity": {G5: 8},
                "sharing": "RESERVE",
                "in_share_preemption": False,
                "state": "ENABLED",
                "weight": 1,
            },
        ],
    }


# --- one case per rule -----------------------------------------------------------------

QUEUE_CASES: dict[str, tuple[object, list[tuple[str, str]]]] = {
    "the top level is not a mapping": (
        [BASE],
        [
            (
                "",
                "a quota config must be a mapping with keys job_queue, capacity and shares, "
                "got a list",
            )
        ],
    ),
    "an unknown top-level key, with the closest allowed key": (
        config(victim_ordr="most_recent"),
        [
            (
                "victim_ordr",
                f"unknown key victim_ordr (did you mean victim_order?); allowed keys: {QUEUE_KEYS}",
            )
        ],
    ),
    "an unknown top-level key like nothing allowed": (
        config(owner="team-ml"),
        [("owner", f"unknown key owner; allowed keys: {QUEUE_KEYS}")],
    ),
    "history_days with aws_batch": (
        config(history_days=30),
        [
            (
                "history_days",
                "history_days is for backend airflow_pools (the pool manager records it); "
                "this config's is aws_batch",
            )
        ],
    ),
    "history_days is not positive": (
        config(backend="airflow_pools", history_days=0),
        [("history_days", "must be a number of days > 0, got 0")],
    ),
    "job_queue is missing": (
        config(job_queue=DROP),
        [("job_queue", "is required (the AWS Batch job queue's name)")],
    ),
    "job_queue has a space": (
        config(job_queue="ml training"),
        [("job_queue", f"must be a job queue name of {NAME_RULE}, got 'ml training'")],
    ),
    "job_queue is longer than 128 characters": (
        config(job_queue="q" * 129),
        [
            (
                "job_queue",
                f"must be a job queue name of {NAME_RULE}, got '{'q' * 40}'... (129 characters)",
            )
        ],
    ),
    "job_queue is empty": (
        config(job_queue=""),
        [("job_queue", f"must be a job queue name of {NAME_RULE}, got ''")],
    ),
    "job_queue is a number": (
        config(job_queue=2024),
        [
            (
                "job_queue",
                f"must be a job queue name of {NAME_RULE}, got 2024 (quote it to make it a string)",
            )
        ],
    ),
    "capacity is missing": (
        config(capacity=DROP, shares=[{"name": "nlp", "capacity": {P4D: 8}}]),
        [("capacity", "is required (the queue's instances per unit, e.g. {ml.p4d.24xlarge: 16})")],
    ),
    "capacity is not a mapping": (
        config(capacity=16),
        [
            (
                "capacity",
                "must be a non-empty mapping of unit to instance count, "
                "e.g. {ml.p4d.24xlarge: 16}, got 16",
            )
        ],
    ),
    "capacity is empty": (
        config(capacity={}),
        [
            (
                "capacity",
                "must be a non-empty mapping of unit to instance count, "
                "e.g. {ml.p4d.24xlarge: 16}, got an empty mapping",
            )
        ],
    ),
    "a unit name has a space": (
        config(capacity={P4D: 16, G5: 32, "ml p5": 4}),
        [("capacity.ml p5", f"is not a valid unit name: use {UNIT_RULE}")],
    ),
    "a queue capacity is 0": (
        config(capacity={P4D: 16, G5: 0}, shares=[{"name": "nlp", "capacity": {P4D: 8}}]),
        [(f"capacity.{G5}", "must be an integer >= 1, got 0")],
    ),
    "a queue capacity is a fraction": (
        config(capacity={P4D: 16.5, G5: 32}),
        [(f"capacity.{P4D}", "must be an integer >= 1, got 16.5")],
    ),
    "a queue capacity is a boolean": (
        config(capacity={P4D: True, G5: 32}, shares=[{"name": "vision", "capacity": {G5: 8}}]),
        [(f"capacity.{P4D}", "must be an integer >= 1, got true")],
    ),
    "idle_assignment in lower case": (
        config(idle_assignment="fifo"),
        [("idle_assignment", "must be one of FIFO, FAIR, got 'fifo' (did you mean FIFO?)")],
    ),
    "victim_order is unknown": (
        config(victim_order="random"),
        [("victim_order", "must be one of most_recent, least_work_lost, got 'random'")],
    ),
    "the queue's min_runtime_seconds is negative": (
        config(min_runtime_seconds=-1),
        [("min_runtime_seconds", "must be a number of seconds >= 0, got -1")],
    ),
    "the queue's min_runtime_seconds is a string": (
        config(min_runtime_seconds="10m"),
        [("min_runtime_seconds", "must be a number of seconds >= 0, got '10m'")],
    ),
    "shares is missing": (
        config(shares=DROP),
        [("shares", "is required (a list of 1 to 20 quota shares)")],
    ),
    "shares is a mapping": (
        config(shares={"name": "nlp", "capacity": {P4D: 8}}),
        [("shares", "must be a list of 1 to 20 quota shares, got a mapping")],
    ),
    "shares is empty": (
        config(shares=[]),
        [("shares", "must be a list of 1 to 20 quota shares, got an empty list")],
    ),
    "more than 20 shares": (
        config(shares=[{"name": f"s{i}", "capacity": {P4D: 0}} for i in range(21)]),
        [("shares", "must have at most 20 quota shares (an AWS limit per job queue), got 21")],
    ),
}

SHARE_CASES: dict[str, tuple[object, list[tuple[str, str]]]] = {
    "a share is not a mapping": (
        config(shares=[{"name": "nlp", "capacity": {P4D: 8}}, "research"]),
        [("shares[1]", "must be a mapping with at least name and capacity, got 'research'")],
    ),
    "a misspelt share key, with the closest allowed key": (
        with_share(0, borow_limit=50),
        [
            (
                "shares[0].borow_limit",
                f"unknown key borow_limit (did you mean borrow_limit?); allowed keys: {SHARE_KEYS}",
            )
        ],
    ),
    "a share name is missing": (
        with_share(1, name=DROP),
        [("shares[1].name", "is required (the quota share's name)")],
    ),
    "a share name has a dot": (
        with_share(1, name="research.v2"),
        [("shares[1].name", f"must be a quota share name of {NAME_RULE}, got 'research.v2'")],
    ),
    "two shares have the same name": (
        with_share(1, name="nlp"),
        [("shares[1].name", "duplicate share name nlp; shares[0] has it")],
    ),
    "a share capacity is missing": (
        with_share(1, capacity=DROP),
        [
            (
                "shares[1].capacity",
                "is required (the instances per unit this share owns, e.g. {ml.p4d.24xlarge: 8})",
            )
        ],
    ),
    "a share capacity is empty": (
        with_share(1, capacity={}),
        [
            (
                "shares[1].capacity",
                "must map 1 to 5 units to instance counts, e.g. {ml.p4d.24xlarge: 8}, "
                "got an empty mapping",
            )
        ],
    ),
    "a share capacity is a number": (
        with_share(1, capacity=8),
        [
            (
                "shares[1].capacity",
                "must map 1 to 5 units to instance counts, e.g. {ml.p4d.24xlarge: 8}, got 8",
            )
        ],
    ),
    "a share has more than 5 units": (
        config(
            capacity={u: 1 for u in "abcdef"},
            shares=[{"name": "wide", "capacity": {u: 1 for u in "abcdef"}}],
        ),
        [
            (
                "shares[0].capacity",
                "must have at most 5 units (an AWS limit), got 6: a, b, c, d, e, f",
            )
        ],
    ),
    "a share owns a unit the queue does not have": (
        with_share(0, capacity={P4D: 8, "ml.p5.48xlarge": 2}),
        [
            (
                "shares[0].capacity.ml.p5.48xlarge",
                "unit ml.p5.48xlarge is not in the queue's capacity; "
                "the queue has ml.p4d.24xlarge, ml.g5.12xlarge",
            )
        ],
    ),
    "a share owns a negative count": (
        with_share(0, capacity={P4D: -1}),
        [(f"shares[0].capacity.{P4D}", "must be an integer >= 0, got -1")],
    ),
    "a share owns more of a unit than the queue has": (
        config(shares=[{"name": "nlp", "capacity": {P4D: 20}}]),
        [
            (
                f"shares[0].capacity.{P4D}",
                "must be at most 16 (the queue's capacity of ml.p4d.24xlarge), got 20",
            )
        ],
    ),
    "the shares own more of a unit than the queue has": (
        config(
            shares=[
                {"name": "nlp", "capacity": {P4D: 8}},
                {"name": "vision", "capacity": {P4D: 6, G5: 16}},
                {"name": "research", "capacity": {P4D: 4}},
            ]
        ),
        [
            (
                f"capacity.{P4D}",
                "the shares own 18 in total (nlp 8, vision 6, research 4) but the queue has 16; "
                "together they may own at most the queue's capacity, "
                "or their guarantees cannot all be met",
            )
        ],
    ),
    "sharing in lower case": (
        with_share(1, sharing="lend"),
        [
            (
                "shares[1].sharing",
                "must be one of RESERVE, LEND, LEND_AND_BORROW, got 'lend' (did you mean LEND?)",
            )
        ],
    ),
    "state is a YAML boolean": (
        with_share(0, state=False),
        [("shares[0].state", "must be one of ENABLED, DISABLED, got false")],
    ),
    "borrow_limit below -1": (
        with_share(0, borrow_limit=-5),
        [("shares[0].borrow_limit", "must be an integer >= -1 (-1 = unlimited), got -5")],
    ),
    "borrow_limit is a fraction": (
        with_share(0, borrow_limit=1.5),
        [("shares[0].borrow_limit", "must be an integer >= -1 (-1 = unlimited), got 1.5")],
    ),
    "borrow_limit with sharing LEND": (
        with_share(1, borrow_limit=100),
        [
            (
                "shares[1].borrow_limit",
                "borrow_limit is only allowed with sharing LEND_AND_BORROW; "
                "shares[1] has sharing LEND",
            )
        ],
    ),
    "borrow_limit -1 with sharing RESERVE": (
        with_share(1, sharing="RESERVE", borrow_limit=-1),
        [
            (
                "shares[1].borrow_limit",
                "borrow_limit is only allowed with sharing LEND_AND_BORROW; "
                "shares[1] has sharing RESERVE",
            )
        ],
    ),
    "in_share_preemption is the string yes": (
        with_share(0, in_share_preemption="yes"),
        [("shares[0].in_share_preemption", "must be true or false, got 'yes'")],
    ),
    "in_share_preemption is 1": (
        with_share(0, in_share_preemption=1),
        [("shares[0].in_share_preemption", "must be true or false, got 1")],
    ),
    "weight is 0": (
        with_share(0, weight=0),
        [("shares[0].weight", "must be a number > 0, got 0")],
    ),
    "weight is a boolean": (
        with_share(0, weight=True),
        [("shares[0].weight", "must be a number > 0, got true")],
    ),
    "weight is infinite": (
        with_share(0, weight=float("inf")),
        [("shares[0].weight", "must be a number > 0, got inf")],
    ),
    "a share's min_runtime_seconds is negative": (
        with_share(0, min_runtime_seconds=-0.5),
        [("shares[0].min_runtime_seconds", "must be a number of seconds >= 0, got -0.5")],
    ),
}


@pytest.mark.parametrize(
    ("data", "want"),
    [pytest.param(data, want, id=name) for name, (data, want) in QUEUE_CASES.items()],
)
def test_queue_problems(data: object, want: list[tuple[str, str]]) -> None:
    assert problems_of(data) == want


@pytest.mark.parametrize(
    ("data", "want"),
    [pytest.param(data, want, id=name) for name, (data, want) in SHARE_CASES.items()],
)
def test_share_problems(data: object, want: list[tuple[str, str]]) -> None:
    assert problems_of(data) == want


def test_every_problem_is_reported_at_once() -> None:
    data = {
        "job_queue": "ml training",
        "capacity": {P4D: 16, G5: 0},
        "idle_assignment": "LIFO",
        "shares": [
            {"name": "nlp", "capacity": {P4D: 8}, "borow_limit": 100},
            {"name": "nlp", "capacity": {"gpu": 2}, "sharing": "LEND", "borrow_limit": 50},
            {"name": "vision", "capacity": {P4D: 10}, "in_share_preemption": "true"},
        ],
    }
    assert problems_of(data) == [
        ("job_queue", f"must be a job queue name of {NAME_RULE}, got 'ml training'"),
        (f"capacity.{G5}", "must be an integer >= 1, got 0"),
        ("idle_assignment", "must be one of FIFO, FAIR, got 'LIFO' (did you mean FIFO?)"),
        (
            "shares[0].borow_limit",
            f"unknown key borow_limit (did you mean borrow_limit?); allowed keys: {SHARE_KEYS}",
        ),
        (
            "shares[1].capacity.gpu",
            "unit gpu is not in the queue's capacity; "
            "the queue has ml.p4d.24xlarge, ml.g5.12xlarge",
        ),
        (
            "shares[1].borrow_limit",
            "borrow_limit is only allowed with sharing LEND_AND_BORROW; shares[1] has sharing LEND",
        ),
        ("shares[2].in_share_preemption", "must be true or false, got 'true'"),
        ("shares[1].name", "duplicate share name nlp; shares[0] has it"),
        (
            f"capacity.{P4D}",
            "the shares own 18 in total (nlp 8, vision 10) but the queue has 16; "
            "together they may own at most the queue's capacity, "
            "or their guarantees cannot all be met",
        ),
    ]


def test_the_error_names_its_source_and_counts_the_problems() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(config(job_queue=DROP, shares=DROP), source="dags/quota.yaml")
    assert raised.value.source == "dags/quota.yaml"
    assert str(raised.value) == (
        "2 problems with the quota config in dags/quota.yaml:\n"
        "  job_queue: is required (the AWS Batch job queue's name)\n"
        "  shares: is required (a list of 1 to 20 quota shares)"
    )
    assert isinstance(raised.value, ValueError)


# --- one share on its own --------------------------------------------------------------


def test_share_from_mapping_without_a_queue_checks_only_unit_names() -> None:
    assert share_from_mapping({"name": "nlp", "capacity": {"gpu": 99, "a b": 1}}, "s", None) == (
        None,
        [Problem("s.capacity.a b", f"is not a valid unit name: use {UNIT_RULE}")],
    )


def test_share_from_mapping_gives_the_share() -> None:
    assert share_from_mapping({"name": "nlp", "capacity": {"gpu": 4}}, "s", {"gpu": 8}) == (
        Share(name="nlp", capacity={"gpu": 4}),
        [],
    )


# --- update_share ----------------------------------------------------------------------

EVENT = "events[0].update_share"


def test_update_share_changes_only_the_keys_given() -> None:
    before = parse_config(FULL)
    after = update_share(before, {"name": "nlp", "capacity": {P4D: 4}, "weight": 3}, EVENT)
    assert after == before.with_share(
        Share(
            name="nlp",
            capacity={P4D: 4},
            sharing=Sharing.LEND_AND_BORROW,
            borrow_limit=100,
            in_share_preemption=True,
            weight=3.0,
            min_runtime_seconds=300.5,
        )
    )


def test_update_share_to_another_sharing_drops_the_old_borrow_limit() -> None:
    before = parse_config(FULL)
    after = update_share(before, {"name": "nlp", "sharing": "LEND"}, EVENT)
    nlp = after.share("nlp")
    assert nlp is not None
    assert (nlp.sharing, nlp.borrow_limit) == (Sharing.LEND, -1)


def test_update_share_keeps_the_borrow_limit_when_sharing_stays() -> None:
    before = parse_config(FULL)
    after = update_share(before, {"name": "nlp", "sharing": "LEND_AND_BORROW"}, EVENT)
    assert after == before


UPDATE_CASES: dict[str, tuple[object, list[tuple[str, str]]]] = {
    "the change is not a mapping": (
        ["nlp"],
        [
            (
                EVENT,
                "must be a mapping of the share's keys to change, "
                "e.g. {name: nlp, capacity: {...}}, got a list",
            )
        ],
    ),
    "the change names no share": (
        {"capacity": {P4D: 4}},
        [(f"{EVENT}.name", "is required (the share to change)")],
    ),
    "the change names a share that does not exist": (
        {"name": "speech", "capacity": {P4D: 4}},
        [
            (
                f"{EVENT}.name",
                "no share named speech; the queue has shares nlp, vision, research, "
                "prod-inference-eval",
            )
        ],
    ),
    "the changed share is invalid": (
        {"name": "research", "capacity": {"gpu": 1}, "borrow_limit": 10},
        [
            (
                f"{EVENT}.capacity.gpu",
                "unit gpu is not in the queue's capacity; "
                "the queue has ml.p4d.24xlarge, ml.g5.12xlarge",
            ),
            (
                f"{EVENT}.borrow_limit",
                "borrow_limit is only allowed with sharing LEND_AND_BORROW; "
                f"{EVENT} has sharing LEND",
            ),
        ],
    ),
    "the change makes the shares own more than the queue": (
        {"name": "vision", "capacity": {P4D: 8, G5: 16}},
        [
            (
                f"{EVENT} -> capacity.{P4D}",
                "the shares own 18 in total (nlp 8, vision 8, research 2) but the queue has 16; "
                "together they may own at most the queue's capacity, "
                "or their guarantees cannot all be met",
            )
        ],
    ),
}


@pytest.mark.parametrize(
    ("changes", "want"),
    [pytest.param(changes, want, id=name) for name, (changes, want) in UPDATE_CASES.items()],
)
def test_update_share_problems(changes: object, want: list[tuple[str, str]]) -> None:
    with pytest.raises(ConfigError) as raised:
        update_share(parse_config(FULL), changes, EVENT)
    assert [(p.path, p.message) for p in raised.value.problems] == want


# --- checks reused by job validation ---------------------------------------------------


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(0, [], id="the lowest priority"),
        pytest.param(9999, [], id="the highest priority"),
        pytest.param(10000, ["got 10000"], id="above 9999"),
        pytest.param(-1, ["got -1"], id="negative"),
        pytest.param(5.0, ["got 5.0"], id="a float"),
        pytest.param(True, ["got true"], id="a boolean"),
        pytest.param("5", ["got '5'"], id="a string"),
    ],
)
def test_check_priority(value: object, want: list[str]) -> None:
    rule = "must be an integer from 0 to 9999 (higher runs first)"
    assert check_priority(value, "jobs[0].priority") == [
        Problem("jobs[0].priority", f"{rule}, {got}") for got in want
    ]


DEMAND_CASES: dict[str, tuple[object, list[tuple[str, str]]]] = {
    "a valid demand": ({P4D: 2, G5: 1}, []),
    "an empty demand": (
        {},
        [
            (
                "jobs[0].demand",
                "must map 1 to 5 units to instance counts, e.g. {ml.p4d.24xlarge: 2}, "
                "got an empty mapping",
            )
        ],
    ),
    "a demand that is a number": (
        2,
        [
            (
                "jobs[0].demand",
                "must map 1 to 5 units to instance counts, e.g. {ml.p4d.24xlarge: 2}, got 2",
            )
        ],
    ),
    "a demand of 0 instances": (
        {P4D: 0},
        [(f"jobs[0].demand.{P4D}", "must be an integer >= 1, got 0")],
    ),
    "a demand of a unit the queue does not have": (
        {"gpu": 2},
        [
            (
                "jobs[0].demand.gpu",
                "unit gpu is not in the queue's capacity; "
                "the queue has ml.p4d.24xlarge, ml.g5.12xlarge",
            )
        ],
    ),
    "a demand above the queue's capacity is left to admission": ({P4D: 99}, []),
}


@pytest.mark.parametrize(
    ("value", "want"),
    [pytest.param(value, want, id=name) for name, (value, want) in DEMAND_CASES.items()],
)
def test_check_demand(value: object, want: list[tuple[str, str]]) -> None:
    found = check_demand(value, "jobs[0].demand", parse_config(FULL))
    assert [(p.path, p.message) for p in found] == want


def test_a_pools_fleet_keeps_its_history_for_history_days() -> None:
    parsed = parse_config(config(backend="airflow_pools", history_days=30))
    assert parsed.history_days == 30
    assert parse_config(config_to_dict(parsed)) == parsed
