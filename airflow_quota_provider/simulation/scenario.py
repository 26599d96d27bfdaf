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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_quota_provider.core.config import config_to_dict, parse_config

from airflow_quota_provider.core.model import QueueConfig, Resources
from airflow_quota_provider.exceptions import ConfigError, Problem, ScenarioError

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


class _Fields:
    """Reads typed fields of one mapping, collecting problems instead of raising."""

    def __init__(self, data: Mapping[str, Any], path: str, problems: list[Problem]) -> None:
        self.data = data
        self.path = path
        self.problems = problems

    def _get(self, key: str, default: Any, check: Callable[[Any], bool], want: str) -> Any:
        if key not in self.data:
            if default is _REQUIRED:
                self.problems.append(Problem(f"{self.path}.{key}", f"is required ({want})"))
            return None if default is _REQUIRED else default
        value = self.data[key]
        if not check(value):
            self.problems.append(Problem(f"{self.path}.{key}", f"must be {want}, got {value!r}"))
            return None
        return value

    def text(self, key: str) -> str | None:
        value = self._get(key, _REQUIRED, _is_id, "a non-empty string")
        return None if value is None else str(value)

    def number(self, key: str, default: Any, minimum: float, strict: bool = False) -> Any:
        sign = ">" if strict else ">="
        return self._get(
            key,
            default,
            lambda v: _is_number(v) and (v > minimum if strict else v >= minimum),
            f"a number {sign} {minimum:g}",
        )

    def integer(self, key: str, default: Any, low: int, high: int | None = None) -> Any:
        want = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
        return self._get(
            key,
            default,
            lambda v: _is_int(v) and v >= low and (high is None or v <= high),
            want,
        )

    def unknown(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                self.problems.append(
                    Problem(f"{self.path}.{key}", f"unknown key; allowed: {', '.join(allowed)}")
                )


_REQUIRED = object()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_id(value: object) -> bool:
    return (isinstance(value, str) and value != "") or _is_int(value)


def _demand(value: object, path: str, problems: list[Problem]) -> dict[str, int] | None:
    ok = (
        isinstance(value, Mapping)
        and value
        and all(isinstance(u, str) and _is_int(c) and c >= 1 for u, c in value.items())
    )
    if not ok:
        problems.append(
            Problem(path, f"must map units to instance counts >= 1, e.g. {{gpu: 2}}; got {value!r}")
        )
        return None
    assert isinstance(value, Mapping)
    return dict(value)


def _job(data: object, path: str, problems: list[Problem]) -> JobSpec | None:
    if not isinstance(data, Mapping):
        problems.append(Problem(path, f"must be a mapping with keys {', '.join(_JOB_KEYS)}"))
        return None
    before = len(problems)
    fields = _Fields(data, path, problems)
    fields.unknown(_JOB_KEYS)
    job_id = fields.text("id")
    share = fields.text("share")
    submit = fields.number("submit", 0.0, 0)
    priority = fields.integer("priority", 0, 0, 9999)
    demand = None
    if "demand" in data:
        demand = _demand(data["demand"], f"{path}.demand", problems)
    else:
        problems.append(Problem(f"{path}.demand", "is required (units to instance counts)"))
    duration = fields.number("duration", _REQUIRED, 0, strict=True)
    retries = fields.integer("preemption_retries", None, 0)
    interval = fields.number("checkpoint_interval", None, 0, strict=True)
    if len(problems) > before:
        return None
    assert job_id is not None and share is not None and demand is not None
    return JobSpec(
        job_id,
        share,
        demand,
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
    fields = _Fields(data, path, problems)
    fields.unknown(("at", *_EVENT_ACTIONS))
    at = fields.number("at", _REQUIRED, 0)
    actions = [a for a in _EVENT_ACTIONS if a in data]
    if len(actions) != 1:
        problems.append(Problem(path, f"must have exactly one of {', '.join(_EVENT_ACTIONS)}"))
    elif not isinstance(data[actions[0]], Mapping):
        problems.append(Problem(f"{path}.{actions[0]}", "must be a mapping of the keys to change"))
    elif actions[0] == "update_share" and not _is_id(data[actions[0]].get("name")):
        problems.append(Problem(f"{path}.update_share.name", "is required (the share to change)"))
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
    jobs = [_job(j, f"jobs[{i}]", problems) for i, j in enumerate(_listed(data, "jobs", problems))]
    events = [
        _event(e, f"events[{i}]", problems) for i, e in enumerate(_listed(data, "events", problems))
    ]
    settings = data.get("settings", {})
    delay = 0.0
    if isinstance(settings, Mapping):
        fields = _Fields(settings, "settings", problems)
        fields.unknown(("preemption_delay",))
        delay = fields.number("preemption_delay", 0.0, 0) or 0.0
    else:
        problems.append(Problem("settings", "must be a mapping, e.g. {preemption_delay: 0}"))
    _check_unique_ids(jobs, problems)
    timed = sorted(
        ((e, i) for i, e in enumerate(events) if e is not None), key=lambda pair: pair[0].at
    )
    if config is not None:
        _check_events(config, timed, source, problems)
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


def apply_event(config: QueueConfig, event: ConfigEvent) -> QueueConfig:
    """The config after ``event``; raises :class:`ConfigError` if the result is invalid."""
    data = config_to_dict(config)
    if event.action == "update_share":
        shares = data["shares"]
        for index, share in enumerate(shares):
            if share["name"] == event.changes["name"]:
                shares[index] = {**share, **event.changes}
                break
        else:
            shares.append(dict(event.changes))
    else:
        data.update(event.changes)
    return parse_config(data)


def _check_events(
    config: QueueConfig,
    timed: list[tuple[ConfigEvent, int]],
    source: str | None,
    problems: list[Problem],
) -> None:
    """Apply the events in time order, so an invalid change is reported before the run."""
    for event, index in timed:
        try:
            config = apply_event(config, event)
        except ConfigError as error:
            for problem in error.problems:
                path = f"events[{index}].{event.action}" + (
                    f" -> {problem.path}" if problem.path else ""
                )
                problems.append(Problem(path, problem.message))
