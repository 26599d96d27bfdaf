"""Trace replays under each policy, with metrics checked against hand-worked numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.core.model import IdleAssignment, Sharing, VictimOrder
from airflow_quota_provider.simulation.figures import LEGEND
from airflow_quota_provider.simulation.policies import Extensions, Policy, policy_config
from airflow_quota_provider.simulation.replay import ReplaySettings, replay
from airflow_quota_provider.simulation.report import write_report
from airflow_quota_provider.simulation.scenario import JobSpec
from airflow_quota_provider.simulation.traces import Trace

CONFIG = parse_config(
    {
        "job_queue": "q",
        "capacity": {"gpu": 4},
        "shares": [
            {"name": "a", "capacity": {"gpu": 2}, "in_share_preemption": True},
            {"name": "b", "capacity": {"gpu": 2}},
        ],
    }
)
# b1 borrows a's two idle gpus; a1 reclaims them ten seconds later.
TRACE = Trace(
    "t.csv",
    (
        JobSpec("b1", "b", {"gpu": 4}, 100.0, 0.0),
        JobSpec("a1", "a", {"gpu": 2}, 50.0, 10.0),
    ),
)


def run(policy: Policy, **settings: Any) -> dict[str, Any]:
    return replay(CONFIG, TRACE, ReplaySettings(policy, **settings)).metrics()


def test_aws_reclaims_and_the_guarantee_is_broken_only_during_the_preemption_delay() -> None:
    metrics = run(Policy.AWS, preemption_delay=5)
    # b1 runs 0-15 (stopping from 10), a1 15-65, b1 again 65-165 with nothing kept
    assert metrics["per_share"]["a"] == {
        "utilization": {"gpu": round(100 / (2 * 165), 4)},
        "used_unit_seconds": {"gpu": 100},
        "borrowed_unit_seconds": {},
        "total_wait_seconds": {"mean": 5, "p50": 5, "p95": 5, "p99": 5, "max": 5},
        "first_start_wait_seconds": {"mean": 5, "p50": 5, "p95": 5, "p99": 5, "max": 5},
        "pending_unit_seconds": {"gpu": 10},
        "guarantee_violation_unit_seconds": {"gpu": 10},
        "preemptions": 0,
        "lost_work_unit_seconds": 0,
        "jobs": {"succeeded": 1, "failed": 0, "rejected": 0, "runnable": 0, "running": 0},
    }
    b = metrics["per_share"]["b"]
    assert b["used_unit_seconds"] == {"gpu": 60 + 400}
    assert b["borrowed_unit_seconds"] == {"gpu": 30 + 200}
    # b1 waits 50 s for 4 gpus, more than b owns: no guarantee covers it
    assert b["pending_unit_seconds"] == {"gpu": 200}
    assert b["guarantee_violation_unit_seconds"] == {}
    assert (b["preemptions"], b["lost_work_unit_seconds"]) == (1, 60)
    assert metrics["utilization"] == {"gpu": round(560 / 660, 4)}
    # from 15 to 65, two gpus are idle while b1 waits for four
    assert metrics["demand_utilization"] == {"gpu": round(560 / 660, 4)}
    # b1 waits from 15 (stopped) to 65 after its preemption: in its total wait only
    assert b["total_wait_seconds"] == {"mean": 50, "p50": 50, "p95": 50, "p99": 50, "max": 50}
    assert b["first_start_wait_seconds"] == {"mean": 0, "p50": 0, "p95": 0, "p99": 0, "max": 0}
    assert metrics["total_wait_seconds"] == {
        "mean": 27.5, "p50": 5, "p95": 50, "p99": 50, "max": 50
    }  # fmt: skip
    assert metrics["first_start_wait_seconds"] == {
        "mean": 2.5, "p50": 0, "p95": 5, "p99": 5, "max": 5
    }  # fmt: skip
    assert metrics["guarantee_violation_unit_seconds"] == {"gpu": 10}
    assert (metrics["preemptions"], metrics["end"]) == (1, 165)
    assert metrics["wall_seconds"] >= 0


def test_checkpoints_keep_work_across_a_preemption() -> None:
    metrics = run(Policy.AWS, preemption_delay=5, checkpoint_interval=10)
    # b1 had 15 s of work when it stopped, 10 s of it checkpointed
    assert metrics["per_share"]["b"]["lost_work_unit_seconds"] == 20
    assert metrics["end"] == 65 + 90


def test_static_refuses_what_a_share_cannot_hold_alone() -> None:
    done = replay(CONFIG, TRACE, ReplaySettings(Policy.STATIC))
    assert done.refused == {
        "b1": "EXCEEDS_MAX_QUOTA: the job needs 4 gpu; share b may hold at most 2 "
        "(owns 2, RESERVE does not borrow)"
    }
    assert done.summary() == (
        "read 2 jobs from t.csv; refused 1: 1 EXCEEDS_MAX_QUOTA (e.g. b1: the job needs 4 gpu; "
        "share b may hold at most 2 (owns 2, RESERVE does not borrow))"
    )
    metrics = done.metrics()
    assert metrics["jobs"]["rejected"] == 1
    assert metrics["total_wait_seconds"]["max"] == 0


def test_pooled_serves_first_come_first_served_and_breaks_guarantees() -> None:
    metrics = run(Policy.POOLED)
    # a1 waits for b1 to end at 100: 90 s while its share owns 2 idle gpus
    assert metrics["per_share"]["a"]["total_wait_seconds"]["max"] == 90
    assert metrics["per_share"]["a"]["guarantee_violation_unit_seconds"] == {"gpu": 180}
    assert metrics["demand_utilization"] == {"gpu": 1.0}
    assert metrics["preemptions"] == 0
    assert metrics["end"] == 150


def test_load_compresses_arrivals() -> None:
    metrics = run(Policy.POOLED, load=2)
    assert metrics["per_share"]["a"]["total_wait_seconds"]["max"] == 95


def test_policy_configs() -> None:
    static = policy_config(CONFIG, Policy.STATIC)
    assert [s.sharing for s in static.shares] == [Sharing.RESERVE, Sharing.RESERVE]
    assert static.shares[0].in_share_preemption
    pooled = policy_config(CONFIG, Policy.POOLED)
    assert [dict(s.capacity) for s in pooled.shares] == [{"gpu": 0}, {"gpu": 0}]
    assert not any(s.in_share_preemption for s in pooled.shares)
    assert policy_config(CONFIG, Policy.AWS) == CONFIG
    extended = policy_config(
        CONFIG,
        Policy.AWS,
        Extensions(IdleAssignment.FAIR, 600.0, VictimOrder.LEAST_WORK_LOST),
    )
    assert (extended.idle_assignment, extended.min_runtime_seconds, extended.victim_order) == (
        IdleAssignment.FAIR,
        600.0,
        VictimOrder.LEAST_WORK_LOST,
    )


def test_extensions_are_refused_for_other_policies() -> None:
    with pytest.raises(ValueError) as caught:
        policy_config(CONFIG, Policy.STATIC, Extensions(min_runtime_seconds=60))
    assert str(caught.value) == "extensions (min_runtime_seconds 60) apply to the aws policy only"


def test_min_runtime_delays_the_reclaim() -> None:
    settings = ReplaySettings(Policy.AWS, extensions=Extensions(min_runtime_seconds=30))
    metrics = replay(CONFIG, TRACE, settings).metrics()
    assert metrics["per_share"]["a"]["total_wait_seconds"]["max"] == 20
    assert metrics["per_share"]["a"]["guarantee_violation_unit_seconds"] == {"gpu": 40}


def test_json_adds_the_replay_and_its_metrics_to_the_scenario_shape() -> None:
    data = replay(CONFIG, TRACE, ReplaySettings(Policy.AWS)).to_json()
    assert set(data) == {"jobs", "metrics", "replay"}
    assert data["jobs"]["b1"]["preemptions"] == 1
    assert data["replay"] == {
        "trace": "t.csv",
        "policy": "aws",
        "load": 1.0,
        "extensions": None,
        "jobs_read": 2,
        "refused": 0,
        "summary": "read 2 jobs from t.csv; refused none",
    }
    assert set(data["metrics"]["per_share"]) == {"a", "b"}


def test_the_report_has_its_tables_and_plots(tmp_path: Path) -> None:
    replays = [
        replay(CONFIG, TRACE, ReplaySettings(p), series=True) for p in (Policy.AWS, Policy.POOLED)
    ]
    path = write_report(tmp_path / "out", CONFIG, replays)
    text = path.read_text()
    assert text.startswith("# Replay of t.csv on q\n")
    assert "| aws at load 1 |" in text and "| pooled at load 1 |" in text
    assert "| policy | utilization | mean wait | p95 wait | mean first wait |" in text
    # the legend follows the overall table and each share table
    for line in LEGEND:
        assert text.count(f"- {line}\n") == 3
    images = sorted(p.name for p in (tmp_path / "out").glob("*.png"))
    assert images == [
        "share-violation.png",
        "share-wait.png",
        "usage-aws.png",
        "usage-pooled.png",
        "wait-cdf.png",
    ]
    for image in images:
        assert f"![{image}]({image})" in text
        assert (tmp_path / "out" / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
