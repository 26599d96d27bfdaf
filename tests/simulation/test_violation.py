"""Guarantee violation: waiting demand a share's guarantee covers once it makes room
within what it owns (reclaiming what it lends, stopping its own lower-priority jobs)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.simulation.policies import Extensions
from airflow_quota_provider.simulation.replay import ReplaySettings, replay
from airflow_quota_provider.simulation.scenario import JobSpec
from airflow_quota_provider.simulation.traces import Trace

# a owns all 8 gpu and runs its own 2-gpu priority-1 job; b borrows the other 6; at
# 100 s a submits an 8-gpu priority-9999 job, which fits what a owns once a's own job
# has stopped and b's borrowed jobs are reclaimed
TRACE = Trace(
    "t.csv",
    (
        JobSpec("a-low", "a", {"gpu": 2}, 1000.0, 0.0, priority=1),
        JobSpec("b1", "b", {"gpu": 6}, 1000.0, 0.0),
        JobSpec("a-urgent", "a", {"gpu": 8}, 100.0, 100.0, priority=9999),
    ),
)


def violation(*, in_share: bool, **settings: Any) -> dict[str, Any]:
    config = parse_config(
        {
            "job_queue": "q",
            "capacity": {"gpu": 8},
            "shares": [
                {"name": "a", "capacity": {"gpu": 8}, "in_share_preemption": in_share},
                {"name": "b", "capacity": {"gpu": 0}},
            ],
        }
    )
    metrics = replay(config, TRACE, ReplaySettings(**settings)).metrics()
    owed: dict[str, Any] = metrics["per_share"]["a"]["guarantee_violation_unit_seconds"]
    return owed


@pytest.mark.parametrize(
    ("in_share", "settings", "expected"),
    [
        # a-low and b1 take 30 s to stop: a-urgent waits 100-130 with all 8 gpu covered
        (True, {"preemption_delay": 30}, {"gpu": 8 * 30}),
        # b1 is protected from reclaim until 300 s: nothing is preempted before, and
        # a-urgent waits 100-300 for what its share owns
        (True, {"extensions": Extensions(min_runtime_seconds=300)}, {"gpu": 8 * 200}),
        # both at once: protected until 300, then 30 s to stop
        (
            True,
            {"preemption_delay": 30, "extensions": Extensions(min_runtime_seconds=300)},
            {"gpu": 8 * 230},
        ),
        # preempted at once: a-urgent never waits
        (True, {}, {}),
        # without in-share preemption a's own job keeps 2 of its 8 gpu until 1000 s: an
        # 8-gpu job is more than a can make room for, so its wait breaks no guarantee
        (False, {"preemption_delay": 30}, {}),
    ],
    ids=["preemption delay", "min runtime", "both", "no delay", "no in-share preemption"],
)
def test_waiting_demand_the_share_can_make_room_for_is_counted(
    in_share: bool, settings: dict[str, Any], expected: dict[str, int]
) -> None:
    assert violation(in_share=in_share, **settings) == expected
