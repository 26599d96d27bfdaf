"""Checks a request against its botocore input shape, the way AWS's front door does.

The hooks check a training task's ``CreateTrainingJob`` request with it before
submitting (:mod:`.training_config`); the local endpoint checks every request
it is sent (:mod:`airflow_quota_provider.emulator`), so both refuse alike.

Every problem is collected (required members, types, enums, lengths, ranges,
patterns, unknown members) and reported in one message in AWS's wording::

    2 validation errors detected: Value 'x' at 'ResourceConfig.InstanceType' failed to
    satisfy constraint: Member must satisfy enum value set: [...]; ...

Unknown members are refused although some AWS services ignore them: a
misspelt field is a bug in the caller's DAG, better found here.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StringShape, StructureShape

from airflow_quota_provider.core.model import MAX_AWS_INTEGER, MIN_AWS_INTEGER

_NUMBER_TYPES = {"integer", "long", "float", "double"}
_INTEGRAL_RANGES = {
    "integer": (MIN_AWS_INTEGER, MAX_AWS_INTEGER),
    "long": (-(2**63), 2**63 - 1),
}
"""What AWS's Java front door can read into an ``integer`` or a ``long``; the models
give a ``min``/``max`` only where the service narrows it, and botocore sends any int."""


def problems_of(shape: Shape, value: Any, path: str = "") -> list[str]:
    """Every way ``value`` breaks ``shape``, each as one AWS-style sentence."""
    problems: list[str] = []
    _check(shape, value, path, problems)
    return problems


def validation_message(problems: list[str]) -> str:
    noun = "error" if len(problems) == 1 else "errors"
    return f"{len(problems)} validation {noun} detected: " + "; ".join(problems)


def _check(shape: Shape, value: Any, path: str, problems: list[str]) -> None:
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(shape, StructureShape)
        _check_structure(shape, value, path, problems)
    elif kind == "list":
        assert isinstance(shape, ListShape)
        _check_list(shape, value, path, problems)
    elif kind == "map":
        assert isinstance(shape, MapShape)
        _check_map(shape, value, path, problems)
    elif kind == "string":
        _check_string(shape, value, path, problems)
    elif kind in _NUMBER_TYPES:
        _check_number(shape, value, path, problems)
    else:
        _check_other(kind, value, path, problems)


def _check_other(kind: str, value: Any, path: str, problems: list[str]) -> None:
    if kind == "boolean" and not isinstance(value, bool):
        problems.append(_fail(value, path, "Member must be a boolean"))
    elif kind == "timestamp" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        problems.append(_fail(value, path, "Member must be a timestamp (epoch seconds)"))
    elif kind == "blob":
        _check_blob(value, path, problems)


def _check_structure(shape: StructureShape, value: Any, path: str, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append(_fail(value, path, "Member must be an object"))
        return
    members = shape.members
    for name in shape.required_members:
        if value.get(name) is None:
            problems.append(_fail(None, _join(path, name), "Member must not be null"))
    for name, item in value.items():
        member = members.get(name)
        if member is None:
            known = ", ".join(members)
            where = f" at '{path}'" if path else ""
            problems.append(f"Unknown member '{name}'{where}; known members are {known}")
        elif item is not None:
            _check(member, item, _join(path, name), problems)


def _check_list(shape: ListShape, value: Any, path: str, problems: list[str]) -> None:
    if not isinstance(value, list):
        problems.append(_fail(value, path, "Member must be a list"))
        return
    _check_size(shape, len(value), value, path, problems)
    for index, item in enumerate(value):
        _check(shape.member, item, f"{path}.{index + 1}", problems)


def _check_map(shape: MapShape, value: Any, path: str, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append(_fail(value, path, "Member must be a map"))
        return
    _check_size(shape, len(value), value, path, problems)
    for key, item in value.items():
        _check(shape.key, key, f"{path}.key", problems)
        _check(shape.value, item, f"{path}.{key}", problems)


def _check_string(shape: Shape, value: Any, path: str, problems: list[str]) -> None:
    if not isinstance(value, str):
        problems.append(_fail(value, path, "Member must be a string"))
        return
    enum = shape.enum if isinstance(shape, StringShape) else []
    if enum and value not in enum:
        problems.append(
            _fail(value, path, f"Member must satisfy enum value set: [{', '.join(enum)}]")
        )
        return
    _check_size(shape, len(value), value, path, problems)
    pattern = _pattern(shape.metadata.get("pattern"))
    if pattern is not None and not pattern.fullmatch(value):
        rule = shape.metadata["pattern"]
        problems.append(
            _fail(value, path, f"Member must satisfy regular expression pattern: {rule}")
        )


def _check_number(shape: Shape, value: Any, path: str, problems: list[str]) -> None:
    integral = shape.type_name in ("integer", "long")
    allowed = (int,) if integral else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        problems.append(
            _fail(value, path, f"Member must be {'an integer' if integral else 'a number'}")
        )
        return
    low, high = _number_range(shape)
    if low is not None and value < low:
        problems.append(
            _fail(value, path, f"Member must have value greater than or equal to {low}")
        )
    if high is not None and value > high:
        problems.append(_fail(value, path, f"Member must have value less than or equal to {high}"))


def _number_range(shape: Shape) -> tuple[float | None, float | None]:
    """The model's ``min`` and ``max``, within what an ``integer``/``long`` can hold."""
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if shape.type_name not in _INTEGRAL_RANGES:
        return low, high
    smallest, largest = _INTEGRAL_RANGES[shape.type_name]
    return (
        smallest if low is None else max(low, smallest),
        largest if high is None else min(high, largest),
    )


def _check_size(shape: Shape, size: int, value: Any, path: str, problems: list[str]) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        problems.append(
            _fail(value, path, f"Member must have length greater than or equal to {low}")
        )
    if high is not None and size > high:
        problems.append(_fail(value, path, f"Member must have length less than or equal to {high}"))


def _check_blob(value: Any, path: str, problems: list[str]) -> None:
    if not isinstance(value, str):
        problems.append(_fail(value, path, "Member must be base64-encoded bytes"))
        return
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        problems.append(_fail(value, path, "Member must be base64-encoded bytes"))


@functools.cache
def _pattern(rule: str | None) -> re.Pattern[str] | None:
    """The model's regex, or ``None`` if Python's ``re`` cannot read it (Java-only syntax)."""
    if not rule:
        return None
    try:
        return re.compile(rule, re.DOTALL)
    except re.error:
        return None


def _fail(value: Any, path: str, constraint: str) -> str:
    shown = "null" if value is None else f"'{_short(value)}'"
    where = path or "input"
    return f"Value {shown} at '{where}' failed to satisfy constraint: {constraint}"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
