"""A scenario: a quota config plus jobs, timed config changes and settings.

::

    # quota config keys (job_queue, capacity, shares, ...), then:
    jobs:
      - {id: a1, share: nlp, submit: 0, priority: 10, demand: {gpu: 2}, duration: 3600,
         preemption_retries: 2, checkpoint_interval: 600}
    events:
      - {at: 1800, update_share: {name: nlp, capacity: {gpu: 4}}}
      - {at: 2400, update_queue: {capacity: {gpu: 12}}}
    settings:
      preemption_delay: 0

Every problem of the file is reported at once, by path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_quota_provider.core.config import (
    check_demand,
    check_priority,
    config_to_dict,
    parse_config,
    update_share,
)
from airflow_quota_provider.core.fields import Check, Fields, aws_integer, is_int, number, show
from airflow_quota_provider.core.model import QueueConfig, Resources
from airflow_quota_provider.exceptions import ConfigError, Problem, ScenarioError

EXAMPLE_SCENARIO = Path(__file__).with_name("example.yaml")
"""The scenario ``airflow-quota simulate`` replays without a file (``make demo``)."""

SCENARIO_KEYS = ("jobs", "events", "settings")
_JOB_KEYS = (
    "id",
    "share",
    "submit",
    "priority",
    "demand",
    "duration",
    "preemption_retries",
    "checkpoint_interval",
)
_EVENT_ACTIONS = ("update_share", "update_queue")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job to submit at ``submit`` that needs ``duration`` seconds of work."""

    id: str
    share: str
    demand: Resources
    duration: float
    submit: float = 0.0
    priority: int = 0
    preemption_retries: int | None = None
    checkpoint_interval: float | None = None
    preemptible: bool = True


@dataclass(frozen=True, slots=True)
class ConfigEvent:
    """At ``at``, change one share (``update_share``) or the queue (``update_queue``)."""

    at: float
    action: str
    changes: Mapping[str, Any]


@dataclass(frozen=True)
class Scenario:
    config: QueueConfig
    jobs: tuple[JobSpec, ...]
    events: tuple[ConfigEvent, ...] = ()
    preemption_delay: float = 0.0


def _identifier(value: object, path: str) -> list[Problem]:
    if (isinstance(value, str) and value) or is_int(value):
        return []
    return [Problem(path, f"must be a non-empty string, got {show(value)}")]


def _demand_check(config: QueueConfig | None) -> Check:
    def check(value: object, path: str) -> list[Problem]:
        if config is not None:
            return check_demand(value, path, config)
        ok = isinstance(value, Mapping) and value and all(is_int(c) for c in value.values())
        return [] if ok else [Problem(path, "must map units to instance counts, e.g. {gpu: 2}")]

    return check


_POSITIVE = number(0, strict=True, of=" of seconds")
_SECONDS = number(0, of=" of seconds")


def _job(
    data: object, path: str, config: QueueConfig | None, problems: list[Problem]
) -> JobSpec | None:
    if not isinstance(data, Mapping):
        problems.append(Problem(path, f"must be a mapping with keys {', '.join(_JOB_KEYS)}"))
        return None
    before = len(problems)
    fields = Fields(data, path, problems)
    fields.unknown(_JOB_KEYS)
    job_id = fields.get("id", _identifier, want="the job's id")
    share = fields.get("share", _identifier, want="the quota share it is submitted to")
    submit = fields.get("submit", _SECONDS, 0)
    priority = fields.get("priority", check_priority, 0)
    demand = fields.get("demand", _demand_check(config), want="instances per unit, e.g. {gpu: 2}")
    duration = fields.get("duration", _POSITIVE, want="seconds of work")
    retries = fields.get("preemption_retries", aws_integer(0), None)
    interval = fields.get("checkpoint_interval", _POSITIVE, None)
    if len(problems) > before:
        return None
    return JobSpec(
        str(job_id),
        str(share),
        dict(demand),
        float(duration),
        float(submit),
        priority,
        retries,
        None if interval is None else float(interval),
    )


def _event(data: object, path: str, problems: list[Problem]) -> ConfigEvent | None:
    if not isinstance(data, Mapping):
        problems.append(Problem(path, "must be a mapping: {at: SECONDS, update_share: {...}}"))
        return None
    before = len(problems)
    fields = Fields(data, path, problems)
    fields.unknown(("at", *_EVENT_ACTIONS))
    at = fields.get("at", _SECONDS, want="seconds from the start")
    actions = [a for a in _EVENT_ACTIONS if a in data]
    if len(actions) != 1:
        problems.append(Problem(path, f"must have exactly one of {', '.join(_EVENT_ACTIONS)}"))
    elif not isinstance(data[actions[0]], Mapping):
        problems.append(Problem(f"{path}.{actions[0]}", "must be a mapping of the keys to change"))
    if len(problems) > before:
        return None
    return ConfigEvent(float(at), actions[0], dict(data[actions[0]]))


def _listed(data: Mapping[str, Any], key: str, problems: list[Problem]) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        problems.append(Problem(key, f"must be a list, got {type(value).__name__}"))
        return []
    return value


def parse_scenario(data: object, source: str | None = None) -> Scenario:
    """Validate a scenario mapping; raise :class:`ScenarioError` with all its problems."""
    if not isinstance(data, Mapping):
        raise ScenarioError([Problem("", "a scenario must be a mapping")], source)
    problems: list[Problem] = []
    config: QueueConfig | None = None
    try:
        config = parse_config(data, extra_keys=SCENARIO_KEYS, source=source)
    except ConfigError as error:
        problems.extend(error.problems)
    jobs = [
        _job(job, f"jobs[{i}]", config, problems)
        for i, job in enumerate(_listed(data, "jobs", problems))
    ]
    events = [
        _event(e, f"events[{i}]", problems) for i, e in enumerate(_listed(data, "events", problems))
    ]
    settings = data.get("settings", {})
    delay = 0.0
    if isinstance(settings, Mapping):
        fields = Fields(settings, "settings", problems)
        fields.unknown(("preemption_delay",))
        delay = fields.get("preemption_delay", _SECONDS, 0.0) or 0.0
    else:
        problems.append(Problem("settings", "must be a mapping, e.g. {preemption_delay: 0}"))
    _check_unique_ids(jobs, problems)
    timed = sorted(
        ((e, i) for i, e in enumerate(events) if e is not None), key=lambda pair: pair[0].at
    )
    if config is not None:
        _check_events(config, timed, problems)
    if problems or config is None:
        raise ScenarioError(problems, source)
    return Scenario(
        config,
        tuple(j for j in jobs if j is not None),
        tuple(event for event, _ in timed),
        float(delay),
    )


def _check_unique_ids(jobs: list[JobSpec | None], problems: list[Problem]) -> None:
    first: dict[str, int] = {}
    for index, job in enumerate(jobs):
        if job is None:
            continue
        if job.id in first:
            problems.append(
                Problem(f"jobs[{index}].id", f"duplicate id {job.id}; jobs[{first[job.id]}] has it")
            )
        else:
            first[job.id] = index


def apply_event(config: QueueConfig, event: ConfigEvent, path: str = "") -> QueueConfig:
    """The config after ``event``; raises :class:`ConfigError` if the result is invalid."""
    where = path or f"event at t={event.at:g}"
    if event.action == "update_share":
        return update_share(config, event.changes, f"{where}.update_share")
    data = {**config_to_dict(config), **event.changes}
    try:
        return parse_config(data)
    except ConfigError as error:
        raise ConfigError(
            [Problem(f"{where}.update_queue -> {p.path}", p.message) for p in error.problems]
        ) from None


def _check_events(
    config: QueueConfig,
    timed: list[tuple[ConfigEvent, int]],
    problems: list[Problem],
) -> None:
    """Apply the events in time order, so an invalid change is reported before the run."""
    for event, index in timed:
        try:
            config = apply_event(config, event, f"events[{index}]")
        except ConfigError as error:
            problems.extend(error.problems)
