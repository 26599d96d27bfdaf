"""Scenario files: every problem reported at once, by path, word for word."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_quota_provider.exceptions import ScenarioError
from airflow_quota_provider.simulation.scenario import ConfigEvent, JobSpec, parse_scenario

BASE: dict[str, Any] = {
    "job_queue": "q",
    "capacity": {"gpu": 8},
    "shares": [{"name": "nlp", "capacity": {"gpu": 4}}, {"name": "cv", "capacity": {"gpu": 4}}],
}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data)
    return [str(p) for p in caught.value.problems]


def test_a_valid_scenario_reads_into_jobs_events_and_settings() -> None:
    scenario = parse_scenario(
        {
            **BASE,
            "jobs": [
                {
                    "id": "a1",
                    "share": "nlp",
                    "submit": 5,
                    "priority": 10,
                    "demand": {"gpu": 2},
                    "duration": 60,
                    "preemption_retries": 1,
                    "checkpoint_interval": 30,
                },
                {"id": 7, "share": "cv", "demand": {"gpu": 1}, "duration": 1.5},
            ],
            "events": [
                {"at": 20, "update_share": {"name": "nlp", "capacity": {"gpu": 2}}},
                {"at": 10, "update_queue": {"capacity": {"gpu": 10}}},
            ],
            "settings": {"preemption_delay": 30},
        }
    )
    assert scenario.jobs == (
        JobSpec("a1", "nlp", {"gpu": 2}, 60.0, 5.0, 10, 1, 30.0),
        JobSpec("7", "cv", {"gpu": 1}, 1.5),
    )
    assert scenario.events == (
        ConfigEvent(10.0, "update_queue", {"capacity": {"gpu": 10}}),
        ConfigEvent(20.0, "update_share", {"name": "nlp", "capacity": {"gpu": 2}}),
    )
    assert scenario.preemption_delay == 30.0


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    data = {
        **BASE,
        "jobs": [
            {"id": "a1", "share": "nlp", "demand": {"gpu": 2}, "duration": 0, "priorty": 3},
            {"id": "a1", "share": "nlp", "demand": {"tpu": 1}, "duration": 10},
            {"share": "nlp", "demand": {"gpu": 1}, "duration": 10, "priority": 10000},
            "not a job",
        ],
        "events": [
            {"at": -1, "update_share": {"name": "nlp"}},
            {"at": 5, "update_share": {"name": "nlp", "capacity": {"gpu": 9}}},
            {"at": 6},
        ],
        "settings": {"preemption_delay": "soon"},
    }
    assert problems(data) == [
        "jobs[0].priorty: unknown key priorty (did you mean priority?); allowed keys: id, share, "
        "submit, priority, demand, duration, preemption_retries, checkpoint_interval",
        "jobs[0].duration: must be a number of seconds > 0, got 0",
        "jobs[1].demand.tpu: unit tpu is not in the queue's capacity; the queue has gpu",
        "jobs[2].id: is required (the job's id)",
        "jobs[2].priority: must be an integer from 0 to 9999 (higher runs first), got 10000",
        "jobs[3]: must be a mapping with keys id, share, submit, priority, demand, duration, "
        "preemption_retries, checkpoint_interval",
        "events[0].at: must be a number of seconds >= 0, got -1",
        "events[2]: must have exactly one of update_share, update_queue",
        "settings.preemption_delay: must be a number of seconds >= 0, got 'soon'",
        "events[1].update_share.capacity.gpu: must be at most 8 (the queue's capacity of gpu), "
        "got 9",
    ]


def test_duplicate_job_ids_are_refused() -> None:
    job = {"id": "a1", "share": "nlp", "demand": {"gpu": 1}, "duration": 1}
    assert problems({**BASE, "jobs": [job, job]}) == ["jobs[1].id: duplicate id a1; jobs[0] has it"]


def test_config_problems_come_with_the_scenario_problems() -> None:
    data = {**BASE, "capacity": {"gpu": 6}, "jobs": [{"id": "x"}]}
    assert problems(data) == [
        "capacity.gpu: the shares own 8 in total (nlp 4, cv 4) but the queue has 6; together "
        "they may own at most the queue's capacity, or their guarantees cannot all be met",
        "jobs[0].share: is required (the quota share it is submitted to)",
        "jobs[0].demand: is required (instances per unit, e.g. {gpu: 2})",
        "jobs[0].duration: is required (seconds of work)",
    ]


def test_counts_aws_keeps_in_32_bits_are_refused_past_them() -> None:
    beyond = "(larger than an AWS Integer, 32 bits)"
    assert problems({**BASE, "capacity": {"gpu": 8, "cpu": 2**31}}) == [
        f"capacity.cpu: must be an integer from 1 to 2147483647, got 2147483648 {beyond}"
    ]
    job = {"id": "a1", "share": "nlp", "demand": {"gpu": 2**31}, "duration": 1}
    assert problems({**BASE, "jobs": [{**job, "preemption_retries": 2**31}]}) == [
        f"jobs[0].demand.gpu: must be an integer from 1 to 2147483647, got 2147483648 {beyond}",
        "jobs[0].preemption_retries: must be an integer from 0 to 2147483647, "
        f"got 2147483648 {beyond}",
    ]
