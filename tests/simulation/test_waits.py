"""The two waits of a replay: total (every wait, also after preemptions) and first-start."""

from __future__ import annotations

from typing import Any

from airflow_quota_provider.simulation.output import to_json
from airflow_quota_provider.simulation.scenario import parse_scenario
from airflow_quota_provider.simulation.simulator import Simulator

# b1 borrows a's two gpus; a1 reclaims them at 10 and runs to 60; b1 waits from 10 to
# 60, then runs again (no checkpoint) to 160; c1 waits behind b1 in share b from 20.
SCENARIO: dict[str, Any] = {
    "job_queue": "q",
    "capacity": {"gpu": 4},
    "shares": [{"name": "a", "capacity": {"gpu": 2}}, {"name": "b", "capacity": {"gpu": 2}}],
    "jobs": [
        {"id": "b1", "share": "b", "submit": 0, "demand": {"gpu": 4}, "duration": 100},
        {"id": "a1", "share": "a", "submit": 10, "demand": {"gpu": 2}, "duration": 50},
        {"id": "c1", "share": "b", "submit": 20, "demand": {"gpu": 4}, "duration": 10},
    ],
}


def waits(until: float | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    metrics = to_json(Simulator(parse_scenario(SCENARIO)).run(until=until))["metrics"]
    return metrics["total_wait_seconds"], metrics["first_start_wait_seconds"]


def test_the_wait_after_a_preemption_counts_in_the_total_wait_only() -> None:
    total, first = waits()
    # total: a1 0, b1 50 (10 to 60, after its preemption), c1 140 (20 to 160)
    assert total == {"mean": 63.333, "p50": 50, "p95": 140, "p99": 140, "max": 140}
    # first start: a1 0, b1 0 (it started at once), c1 140
    assert first == {"mean": 46.667, "p50": 0, "p95": 140, "p99": 140, "max": 140}


def test_a_job_still_waiting_at_the_end_counts_up_to_the_end() -> None:
    total, first = waits(until=120)
    # total: a1 0, b1 50, c1 100 (20 to 120, still waiting); first start: a1 0, b1 0
    assert total == {"mean": 50, "p50": 50, "p95": 100, "p99": 100, "max": 100}
    assert first == {"mean": 0, "p50": 0, "p95": 0, "p99": 0, "max": 0}


def test_a_refused_job_and_a_job_not_submitted_yet_never_waited() -> None:
    data = {**SCENARIO, "jobs": [*SCENARIO["jobs"][:2],
                                 {"id": "x", "share": "nobody", "submit": 0,
                                  "demand": {"gpu": 1}, "duration": 5},
                                 {"id": "late", "share": "a", "submit": 500,
                                  "demand": {"gpu": 1}, "duration": 5}]}  # fmt: skip
    metrics = to_json(Simulator(parse_scenario(data)).run(until=100))["metrics"]
    assert metrics["jobs"]["rejected"] == 1
    # only a1 (0) and b1 (50) waited: x was refused, late is not submitted by t=100
    assert metrics["total_wait_seconds"]["mean"] == 25
