"""The scenario runner end to end: scenarios in, every job's story and the metrics out."""

from __future__ import annotations

import json
from typing import Any

from airflow_quota_provider.config_file import load_mapping
from airflow_quota_provider.simulation.output import to_json
from airflow_quota_provider.simulation.scenario import EXAMPLE_SCENARIO, parse_scenario
from airflow_quota_provider.simulation.simulator import Simulator

P = "ml.p4d.24xlarge"


def scenario(jobs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "job_queue": "ml-training",
        "capacity": {P: 8},
        "shares": [
            {"name": "nlp", "capacity": {P: 4}, "borrow_limit": 50},
            {"name": "cv", "capacity": {P: 4}},
        ],
        "jobs": jobs,
        **extra,
    }


def simulate(data: dict[str, Any], until: float | None = None) -> dict[str, Any]:
    return to_json(Simulator(parse_scenario(data)).run(until=until))


def test_the_issue_example_shape() -> None:
    result = simulate(
        scenario(
            [
                {"id": "a1", "share": "nlp", "submit": 0, "demand": {P: 2}, "duration": 3600},
                {
                    "id": "b1",
                    "share": "cv",
                    "submit": 0,
                    "demand": {P: 6},
                    "duration": 1000,
                    "preemption_retries": 0,
                },
                {"id": "a2", "share": "nlp", "submit": 100, "demand": {P: 2}, "duration": 50},
                {"id": "c1", "share": "nlp", "submit": 0, "demand": {P: 7}, "duration": 10},
            ]
        )
    )
    jobs = result["jobs"]
    assert jobs["a1"] == {
        "status": "SUCCEEDED",
        "finished": 3600,
        "preemptions": 0,
        "attempts": [{"start": 0, "end": 3600, "outcome": "SUCCEEDED", "borrowed": {P: 0}}],
    }
    assert jobs["b1"] == {
        "status": "FAILED",
        "finished": 100,
        "reason": "PREEMPTION_RETRIES_EXHAUSTED",
        "message": "preempted 1 times; preemption_retries is 0",
        "preemptions": 1,
        "attempts": [
            {
                "start": 0,
                "end": 100,
                "outcome": "PREEMPTED",
                "borrowed": {P: 2},
                "preemption": "RECLAIM",
                "preempted_by": "a2",
                "work_lost_unit_seconds": 600,
            }
        ],
    }
    assert jobs["a2"]["attempts"] == [
        {"start": 100, "end": 150, "outcome": "SUCCEEDED", "borrowed": {P: 0}}
    ]
    assert jobs["c1"] == {
        "status": "REJECTED",
        "reason": "EXCEEDS_MAX_QUOTA",
        "message": f"the job needs 7 {P}; share nlp may hold at most 6 (owns 4, borrow_limit 50%)",
        "preemptions": 0,
        "attempts": [],
    }
    assert result["metrics"]["preemptions"] == 1
    # 8 instances for 100 s, 4 for 50 s, then 2 until 3600, of 8 over 3600 s
    assert result["metrics"]["utilization"] == {P: round((8 * 100 + 4 * 50 + 2 * 3450) / 28800, 4)}


def test_a_preempted_job_resumes_from_its_last_checkpoint() -> None:
    result = simulate(
        scenario(
            [
                {
                    "id": "borrower",
                    "share": "cv",
                    "submit": 0,
                    "demand": {P: 8},
                    "duration": 3000,
                    "checkpoint_interval": 600,
                },
                {"id": "owner", "share": "nlp", "submit": 1000, "demand": {P: 4}, "duration": 500},
            ]
        )
    )
    borrower = result["jobs"]["borrower"]
    first, second = borrower["attempts"]
    assert first == {
        "start": 0,
        "end": 1000,
        "outcome": "PREEMPTED",
        "borrowed": {P: 4},
        "preemption": "RECLAIM",
        "preempted_by": "owner",
        "work_lost_unit_seconds": 400 * 8,
    }
    # it waits for the owner (nlp holds 4, cv may only take 4 + the 0 idle), then does 2400 s more
    assert second == {"start": 1500, "end": 3900, "outcome": "SUCCEEDED", "borrowed": {P: 4}}
    assert borrower["status"] == "SUCCEEDED"


def test_a_preemption_delay_keeps_the_capacity_until_the_victim_stops() -> None:
    result = simulate(
        scenario(
            [
                {"id": "borrower", "share": "cv", "submit": 0, "demand": {P: 8}, "duration": 5000},
                {"id": "owner", "share": "nlp", "submit": 1000, "demand": {P: 4}, "duration": 500},
            ],
            settings={"preemption_delay": 60},
        )
    )
    assert result["jobs"]["borrower"]["attempts"][0]["end"] == 1060
    assert result["jobs"]["owner"]["attempts"] == [
        {"start": 1060, "end": 1560, "outcome": "SUCCEEDED", "borrowed": {P: 0}}
    ]


def test_lowering_a_share_preempts_above_the_limit_and_fails_what_no_longer_fits() -> None:
    data = scenario(
        [
            {"id": "cv-big", "share": "cv", "submit": 0, "demand": {P: 4}, "duration": 5000},
            {"id": "cv-wide", "share": "cv", "submit": 1, "demand": {P: 4}, "duration": 5000},
            {"id": "nlp-1", "share": "nlp", "submit": 2000, "demand": {P: 4}, "duration": 100},
        ],
        events=[
            {"at": 1000, "update_share": {"name": "cv", "sharing": "LEND", "capacity": {P: 2}}},
            {"at": 1000, "update_share": {"name": "nlp", "capacity": {P: 6}}},
        ],
    )
    result = simulate(data)
    wide = result["jobs"]["cv-wide"]
    assert wide["attempts"][0]["preemption"] == "CAPACITY_REDUCED"
    assert wide["attempts"][0]["end"] == 2000
    assert wide["status"] == "FAILED"
    assert wide["reason"] == "NO_LONGER_FITS"
    assert wide["message"] == (
        f"the job needs 4 {P}; share cv may hold at most 2 (owns 2, LEND does not borrow)"
        " (capacity lowered)"
    )


def test_until_stops_with_running_and_waiting_jobs_explained() -> None:
    result = simulate(
        scenario(
            [
                {"id": "long", "share": "nlp", "submit": 0, "demand": {P: 6}, "duration": 5000},
                {"id": "next", "share": "nlp", "submit": 10, "demand": {P: 1}, "duration": 5},
            ]
        ),
        until=100,
    )
    assert result["jobs"]["long"]["status"] == "RUNNING"
    assert result["jobs"]["long"]["attempts"][0]["end"] is None
    assert result["jobs"]["next"]["status"] == "RUNNABLE"
    assert result["jobs"]["next"]["reason"] == "BORROW_LIMIT_REACHED"
    assert result["jobs"]["next"]["message"] == (
        f"nlp needs 1 {P}; it uses 6 of 4 and may borrow 0 more (borrow_limit 50%)"
    )
    assert result["metrics"]["end"] == 100


def test_the_example_scenario_is_deterministic_and_never_ping_pongs() -> None:
    data = load_mapping(EXAMPLE_SCENARIO)
    first, second = simulate(data), simulate(data)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    pairs = {
        (attempt["preempted_by"], job_id)
        for job_id, job in first["jobs"].items()
        for attempt in job["attempts"]
        if attempt["outcome"] == "PREEMPTED"
    }
    assert pairs, "the example must show preemption"
    assert not {(b, a) for a, b in pairs} & pairs


def test_the_example_scenario_shows_every_outcome() -> None:
    result = simulate(load_mapping(EXAMPLE_SCENARIO))
    kinds = {
        attempt.get("preemption") for job in result["jobs"].values() for attempt in job["attempts"]
    }
    assert kinds >= {"RECLAIM", "IN_SHARE", "CAPACITY_REDUCED"}
    statuses = {job["status"] for job in result["jobs"].values()}
    assert statuses == {"SUCCEEDED", "FAILED", "REJECTED"}
