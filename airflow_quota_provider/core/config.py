"""The quota config: validate a mapping (as loaded from YAML or JSON) into a QueueConfig.

The file shape, every key explained, is ``dags/quota.yaml``: ``job_queue``,
``capacity`` (instances per unit), ``idle_assignment``, ``min_runtime_seconds``,
``victim_order`` and ``shares``, each share with ``name``, ``capacity``,
``sharing``, ``borrow_limit``, ``in_share_preemption``, ``state``, ``weight`` and
``min_runtime_seconds``.

Every problem of the input is reported at once, each at a path such as
``shares[1].borrow_limit`` with a message saying what was found and what is
allowed. Pure: reading files is :mod:`airflow_quota_provider.config_file`'s job.

Rules AWS does not publish, chosen here:

- job queue and share names follow AWS's documented character set (1 to 128
  letters, digits, ``-`` and ``_``), with no rule on the first character;
- units are 1 to 64 letters, digits, ``.``, ``-`` and ``_`` (instance types such
  as ``ml.p4d.24xlarge``, or generic names such as ``gpu`` for the simulator);
- a share may own 0 of a unit (it then only borrows it), but the shares of a
  unit may not own more than the queue has in total: their guarantees could not
  all be honoured at once.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from airflow_quota_provider.core.backend_config import parse_backend
from airflow_quota_provider.core.fields import (
    Check,
    Fields,
    aws_integer,
    boolean,
    choice,
    is_int,
    is_number,
    number,
    show,
)
from airflow_quota_provider.core.model import (
    MAX_PRIORITY,
    MAX_SHARES_PER_QUEUE,
    MAX_UNITS_PER_SHARE,
    MIN_PRIORITY,
    UNLIMITED_BORROW,
    Backend,
    IdleAssignment,
    QueueConfig,
    Share,
    ShareState,
    Sharing,
    VictimOrder,
)
from airflow_quota_provider.exceptions import ConfigError, Problem

QUEUE_KEYS: Final = (
    "backend",
    "job_queue",
    "capacity",
    "idle_assignment",
    "min_runtime_seconds",
    "victim_order",
    "shares",
    "pools",
    "history_days",
)
SHARE_KEYS: Final = (
    "name",
    "capacity",
    "sharing",
    "borrow_limit",
    "in_share_preemption",
    "state",
    "weight",
    "min_runtime_seconds",
    "preemption_retries",
    "preemptible",
)
_POOLS_ONLY_SHARE_KEYS: Final = {
    "preemption_retries": "each job sets it (preemptionRetriesBeforeTermination)",
    "preemptible": "AWS Batch may preempt any job of a share",
}
"""Share keys only the ``airflow_pools`` backend acts on, and why ``aws_batch`` has none."""

QueueUnits = Mapping[str, int | None]
"""A queue's units with their capacity; ``None`` where the capacity itself is invalid."""


_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_NAME_RULE = "1 to 128 letters, digits, hyphens (-) and underscores (_)"
_UNIT = re.compile(r"[A-Za-z0-9._-]{1,64}")
_UNIT_RULE = (
    "1 to 64 letters, digits, dots (.), hyphens (-) and underscores (_), "
    "such as ml.p4d.24xlarge or gpu"
)
_EXAMPLE_UNIT = "ml.p4d.24xlarge"


# --- public entry points ---------------------------------------------------------------


def parse_config(
    data: object, *, extra_keys: Collection[str] = (), source: str | None = None
) -> QueueConfig:
    """Validate a quota config mapping; raise :class:`ConfigError` listing all its problems.

    :param data: the mapping, as loaded from a YAML or JSON file.
    :param extra_keys: top-level keys that are allowed and ignored (a scenario's ``jobs``).
    :param source: where ``data`` came from (a file name), for the error message.
    """
    if not isinstance(data, Mapping):
        message = "a quota config must be a mapping with keys job_queue, capacity and shares"
        raise ConfigError([Problem("", f"{message}, got {show(data)}")], source)
    problems: list[Problem] = []
    fields = Fields(data, "", problems)
    fields.unknown(QUEUE_KEYS, tuple(extra_keys))
    job_queue = fields.get(
        "job_queue", _name("a job queue name"), want="the AWS Batch job queue's name"
    )
    queue = _queue_capacity(data, problems)
    idle = fields.get("idle_assignment", choice(IdleAssignment), IdleAssignment.FIFO.value)
    min_runtime = fields.get("min_runtime_seconds", _SECONDS, None)
    victims = fields.get("victim_order", choice(VictimOrder), VictimOrder.MOST_RECENT.value)
    shares = _shares(data, queue, problems)
    named = [i.get("name") for i in data.get("shares") or () if isinstance(i, Mapping)]
    names = [name for name in named if isinstance(name, str)]
    backend, pools = parse_backend(data, names, sorted(queue or {}), problems)
    history_days = fields.get("history_days", _DAYS, None)
    if history_days is not None and backend is not Backend.AIRFLOW_POOLS:
        message = "history_days is for backend airflow_pools (the pool manager records it)"
        problems.append(Problem("history_days", f"{message}; this config's is {backend.value}"))
    if backend is Backend.AWS_BATCH:
        for index, item in enumerate(data.get("shares") or ()):
            for key, why in _POOLS_ONLY_SHARE_KEYS.items():
                if isinstance(item, Mapping) and key in item:
                    message = f"{key} of a share is for backend airflow_pools; with aws_batch {why}"
                    problems.append(Problem(f"shares[{index}].{key}", message))
    if problems or queue is None:
        raise ConfigError(problems, source)
    return QueueConfig(
        job_queue=job_queue,
        capacity={unit: count for unit, count in queue.items() if count is not None},
        shares=tuple(shares),
        idle_assignment=IdleAssignment(idle),
        min_runtime_seconds=_seconds(min_runtime),
        victim_order=VictimOrder(victims),
        backend=backend,
        pools=pools,
        history_days=None if history_days is None else _plain(history_days),
    )


def share_from_mapping(
    data: object, path: str, queue_capacity: QueueUnits | None
) -> tuple[Share | None, list[Problem]]:
    """Validate one share at ``path``: the share (``None`` if invalid) and its problems.

    :param queue_capacity: the queue's units and capacities, to check the share's
        units against; ``None`` when unknown (only the unit names are checked then).
        Checks across shares (duplicate names, total capacity) are not made here.
    """
    if not isinstance(data, Mapping):
        want = "must be a mapping with at least name and capacity"
        return None, [Problem(path, f"{want}, got {show(data)}")]
    problems: list[Problem] = []
    fields = Fields(data, path, problems)
    fields.unknown(SHARE_KEYS)
    name = fields.get("name", _name("a quota share name"), want="the quota share's name")
    capacity = _share_capacity(data, path, queue_capacity, problems)
    sharing = fields.get("sharing", choice(Sharing), Sharing.LEND_AND_BORROW.value)
    borrow_limit = fields.get("borrow_limit", _BORROW_LIMIT, UNLIMITED_BORROW)
    if "borrow_limit" in data and sharing not in (None, Sharing.LEND_AND_BORROW.value):
        problems.append(
            Problem(
                fields.at("borrow_limit"),
                "borrow_limit is only allowed with sharing LEND_AND_BORROW; "
                f"{path} has sharing {sharing}",
            )
        )
    preemption = fields.get("in_share_preemption", boolean, False)
    state = fields.get("state", choice(ShareState), ShareState.ENABLED.value)
    weight = fields.get("weight", number(0, strict=True), 1.0)
    min_runtime = fields.get("min_runtime_seconds", _SECONDS, None)
    retries = fields.get("preemption_retries", aws_integer(0), None)
    preemptible = fields.get("preemptible", boolean, True)
    if problems or capacity is None:
        return None, problems
    share = Share(
        name=name,
        capacity=capacity,
        sharing=Sharing(sharing),
        borrow_limit=borrow_limit,
        in_share_preemption=preemption,
        state=ShareState(state),
        weight=float(weight),
        min_runtime_seconds=_seconds(min_runtime),
        preemption_retries=retries,
        preemptible=preemptible,
    )
    return share, []


def update_share(config: QueueConfig, changes: object, path: str) -> QueueConfig:
    """``config`` with the keys in ``changes`` applied to the share ``changes["name"]``.

    The changed share and then the whole config are validated again; problems of
    the share are at ``{path}.{key}``, problems across shares at ``{path} -> {where}``.
    A change of ``sharing`` without a ``borrow_limit`` drops the old ``borrow_limit``
    (it is only allowed with LEND_AND_BORROW, and starts again from unlimited).
    """
    index, changes = _share_index(config, changes, path)
    old = config_to_dict(config)["shares"][index]
    if changes.get("sharing", old["sharing"]) != old["sharing"] and "borrow_limit" not in changes:
        old.pop("borrow_limit", None)
    share, problems = share_from_mapping({**old, **changes}, path, config.capacity)
    if share is None:
        raise ConfigError(problems)
    updated = config.with_share(share)
    _check_totals(updated.capacity, [(s.name, s.capacity) for s in updated.shares], problems)
    if problems:
        raise ConfigError([Problem(f"{path} -> {p.path}", p.message) for p in problems])
    return updated


def config_to_dict(config: QueueConfig) -> dict[str, Any]:
    """The file shape of ``config``: ``parse_config(config_to_dict(c)) == c``."""
    data: dict[str, Any] = {
        "job_queue": config.job_queue,
        "capacity": dict(config.capacity),
        "idle_assignment": config.idle_assignment.value,
        "victim_order": config.victim_order.value,
    }
    if config.min_runtime_seconds is not None:
        data["min_runtime_seconds"] = _plain(config.min_runtime_seconds)
    data["shares"] = [_share_to_dict(share) for share in config.shares]
    if config.backend is not Backend.AWS_BATCH:
        data["backend"] = config.backend.value
    if config.pools:
        data["pools"] = {share: dict(units) for share, units in config.pools.items()}
    if config.history_days is not None:
        data["history_days"] = _plain(config.history_days)
    return data


def check_priority(value: object, path: str) -> list[Problem]:
    """A job's scheduling priority: an integer from 0 to 9999, higher runs first."""
    if is_int(value) and MIN_PRIORITY <= value <= MAX_PRIORITY:
        return []
    want = f"must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY} (higher runs first)"
    return [Problem(path, f"{want}, got {show(value)}")]


def check_demand(value: object, path: str, config: QueueConfig) -> list[Problem]:
    """A job's demand: 1 to 5 of the queue's units, each an instance count >= 1.

    Whether the demand can ever fit its share is admission's question, not this one.
    """
    return _units(value, path, config.capacity, minimum=1, example=2, within_queue=False)


# --- the queue and its shares ----------------------------------------------------------


def _queue_capacity(
    data: Mapping[Any, Any], problems: list[Problem]
) -> dict[str, int | None] | None:
    if "capacity" not in data:
        want = f"the queue's instances per unit, e.g. {{{_EXAMPLE_UNIT}: 16}}"
        problems.append(Problem("capacity", f"is required ({want})"))
        return None
    value = data["capacity"]
    if not isinstance(value, Mapping) or not value:
        want = "must be a non-empty mapping of unit to instance count"
        example = f"e.g. {{{_EXAMPLE_UNIT}: 16}}"
        problems.append(Problem("capacity", f"{want}, {example}, got {show(value)}"))
        return None
    queue: dict[str, int | None] = {}
    for unit, count in value.items():
        path = f"capacity.{unit}"
        problems.extend(_unit_name(unit, path))
        found = aws_integer(1)(count, path)
        problems.extend(found)
        queue[str(unit)] = None if found else count
    return queue


def _shares(
    data: Mapping[Any, Any], queue: QueueUnits | None, problems: list[Problem]
) -> list[Share]:
    want = f"a list of 1 to {MAX_SHARES_PER_QUEUE} quota shares"
    if "shares" not in data:
        problems.append(Problem("shares", f"is required ({want})"))
        return []
    items = data["shares"]
    if not isinstance(items, list) or not items:
        problems.append(Problem("shares", f"must be {want}, got {show(items)}"))
        return []
    if len(items) > MAX_SHARES_PER_QUEUE:
        limit = f"must have at most {MAX_SHARES_PER_QUEUE} quota shares"
        problems.append(
            Problem("shares", f"{limit} (an AWS limit per job queue), got {len(items)}")
        )
    shares: list[Share] = []
    for index, item in enumerate(items):
        share, found = share_from_mapping(item, f"shares[{index}]", queue)
        problems.extend(found)
        if share is not None:
            shares.append(share)
    _check_duplicate_names(items, problems)
    if queue is not None:
        _check_totals(queue, _owned(items, queue), problems)
    return shares


def _share_capacity(
    data: Mapping[Any, Any], path: str, queue: QueueUnits | None, problems: list[Problem]
) -> dict[str, int] | None:
    if "capacity" not in data:
        want = f"the instances per unit this share owns, e.g. {{{_example_unit(queue)}: 8}}"
        problems.append(Problem(f"{path}.capacity", f"is required ({want})"))
        return None
    value = data["capacity"]
    found = _units(value, f"{path}.capacity", queue, minimum=0, example=8, within_queue=True)
    problems.extend(found)
    if found:
        return None
    return dict(value)


def _units(
    value: object,
    path: str,
    queue: QueueUnits | None,
    *,
    minimum: int,
    example: int,
    within_queue: bool,
) -> list[Problem]:
    """Problems of a mapping of 1 to 5 units to instance counts >= ``minimum``."""
    if not isinstance(value, Mapping) or not value:
        want = f"must map 1 to {MAX_UNITS_PER_SHARE} units to instance counts"
        sample = f"e.g. {{{_example_unit(queue)}: {example}}}"
        return [Problem(path, f"{want}, {sample}, got {show(value)}")]
    problems: list[Problem] = []
    if len(value) > MAX_UNITS_PER_SHARE:
        listed = ", ".join(str(unit) for unit in value)
        limit = f"must have at most {MAX_UNITS_PER_SHARE} units (an AWS limit)"
        problems.append(Problem(path, f"{limit}, got {len(value)}: {listed}"))
    for unit, count in value.items():
        unit_path = f"{path}.{unit}"
        if queue is None:
            problems.extend(_unit_name(unit, unit_path))
        elif unit not in queue:
            has = ", ".join(queue)
            message = f"unit {unit} is not in the queue's capacity; the queue has {has}"
            problems.append(Problem(unit_path, message))
        found = aws_integer(minimum)(count, unit_path)
        if not found and within_queue and queue is not None:
            found = _at_most_queue(count, unit, unit_path, queue)
        problems.extend(found)
    return problems


def _at_most_queue(count: int, unit: object, path: str, queue: QueueUnits) -> list[Problem]:
    capacity = queue.get(str(unit))
    if capacity is None or count <= capacity:
        return []
    want = f"must be at most {capacity} (the queue's capacity of {unit})"
    return [Problem(path, f"{want}, got {count}")]


def _check_duplicate_names(items: Sequence[object], problems: list[Problem]) -> None:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            continue
        if first.setdefault(name, index) != index:
            message = f"duplicate share name {name}; shares[{first[name]}] has it"
            problems.append(Problem(f"shares[{index}].name", message))


def _owned(items: Sequence[object], queue: QueueUnits) -> list[tuple[str, Mapping[str, int]]]:
    """Each share's name and capacity, for every share whose capacity is valid.

    Other mistakes of a share do not hide its capacity from the total.
    """
    owned: list[tuple[str, Mapping[str, int]]] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        capacity = item.get("capacity")
        if not isinstance(capacity, Mapping) or _units(
            capacity, "", queue, minimum=0, example=0, within_queue=True
        ):
            continue
        name = item.get("name")
        owned.append((name if isinstance(name, str) else f"shares[{index}]", capacity))
    return owned


def _check_totals(
    queue: QueueUnits, owned: Sequence[tuple[str, Mapping[str, int]]], problems: list[Problem]
) -> None:
    """The shares of a unit may own at most the queue's capacity of it, all together."""
    for unit, capacity in queue.items():
        owners = [(name, units[unit]) for name, units in owned if units.get(unit, 0) > 0]
        total = sum(count for _, count in owners)
        if capacity is None or total <= capacity:
            continue
        each = ", ".join(f"{name} {count}" for name, count in owners)
        problems.append(
            Problem(
                f"capacity.{unit}",
                f"the shares own {total} in total ({each}) but the queue has {capacity}; "
                "together they may own at most the queue's capacity, "
                "or their guarantees cannot all be met",
            )
        )


def _share_index(config: QueueConfig, changes: object, path: str) -> tuple[int, Mapping[Any, Any]]:
    """Which share ``changes`` names, and the changes as a mapping."""
    if not isinstance(changes, Mapping):
        want = "must be a mapping of the share's keys to change, e.g. {name: nlp, capacity: {...}}"
        raise ConfigError([Problem(path, f"{want}, got {show(changes)}")])
    if "name" not in changes:
        raise ConfigError([Problem(f"{path}.name", "is required (the share to change)")])
    name = changes["name"]
    names = [share.name for share in config.shares]
    if name not in names:
        shown = name if isinstance(name, str) else show(name)
        message = f"no share named {shown}; the queue has shares {', '.join(names)}"
        raise ConfigError([Problem(f"{path}.name", message)])
    return names.index(name), changes


def _share_to_dict(share: Share) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": share.name,
        "capacity": dict(share.capacity),
        "sharing": share.sharing.value,
    }
    if share.sharing.borrows:
        data["borrow_limit"] = share.borrow_limit
    data["in_share_preemption"] = share.in_share_preemption
    data["state"] = share.state.value
    data["weight"] = _plain(share.weight)
    if share.min_runtime_seconds is not None:
        data["min_runtime_seconds"] = _plain(share.min_runtime_seconds)
    if share.preemption_retries is not None:
        data["preemption_retries"] = share.preemption_retries
    if not share.preemptible:
        data["preemptible"] = False
    return data


# --- reading fields --------------------------------------------------------------------


_SECONDS = number(0, of=" of seconds")
_DAYS = number(0, strict=True, of=" of days")
_BORROW_LIMIT = aws_integer(UNLIMITED_BORROW, " (-1 = unlimited)")


def _name(what: str) -> Check:
    def check(value: object, path: str) -> list[Problem]:
        if isinstance(value, str) and _NAME.fullmatch(value):
            return []
        hint = " (quote it to make it a string)" if is_number(value) else ""
        return [Problem(path, f"must be {what} of {_NAME_RULE}, got {show(value)}{hint}")]

    return check


def _unit_name(unit: object, path: str) -> list[Problem]:
    if isinstance(unit, str) and _UNIT.fullmatch(unit):
        return []
    return [Problem(path, f"is not a valid unit name: use {_UNIT_RULE}")]


def _example_unit(queue: QueueUnits | None) -> str:
    return next(iter(queue), _EXAMPLE_UNIT) if queue else _EXAMPLE_UNIT


def _seconds(value: float | None) -> float | None:
    return None if value is None else float(value)


def _plain(number: float) -> float | int:
    """Whole numbers as integers, so a written-back file reads ``weight: 1``."""
    return int(number) if float(number).is_integer() else number
