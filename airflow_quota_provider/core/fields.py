"""Reading typed fields of loaded YAML or JSON, collecting every problem instead of raising.

Shared by the quota config and the scenario and trace readers, so a wrong value
reads the same everywhere: ``must be an integer >= 0, got 'ten'``.
"""

from __future__ import annotations

import difflib
import enum
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeGuard

from airflow_quota_provider.core.model import MAX_AWS_INTEGER
from airflow_quota_provider.exceptions import Problem

Check = Callable[[object, str], list[Problem]]
"""Checks one value found at a path; returns its problems (none if it is valid)."""

REQUIRED: Final = object()
"""The default of a field that must be present."""

_LONGEST_SHOWN = 40


class Fields:
    """Reads the keys of one mapping, collecting problems instead of raising."""

    def __init__(self, data: Mapping[Any, Any], path: str, problems: list[Problem]) -> None:
        self.data = data
        self.path = path
        self.problems = problems

    def at(self, key: object) -> str:
        return f"{self.path}.{key}" if self.path else str(key)

    def unknown(self, allowed: Sequence[str], ignored: Sequence[str] = ()) -> None:
        known = (*allowed, *ignored)
        for key in self.data:
            if key not in known:
                hint = did_you_mean(key, known)
                message = f"unknown key {key}{hint}; allowed keys: {', '.join(known)}"
                self.problems.append(Problem(self.at(key), message))

    def get(self, key: str, check: Check, default: Any = REQUIRED, want: str = "") -> Any:
        """The value at ``key`` if ``check`` passes, ``default`` if absent, else ``None``."""
        if key not in self.data:
            if default is REQUIRED:
                self.problems.append(Problem(self.at(key), f"is required ({want})"))
                return None
            return default
        found = check(self.data[key], self.at(key))
        self.problems.extend(found)
        return None if found else self.data[key]


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[float]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def integer(minimum: int, note: str = "", *, maximum: int | None = None, beyond: str = "") -> Check:
    """An integer >= ``minimum`` and at most ``maximum``; ``beyond`` says why not more."""

    def check(value: object, path: str) -> list[Problem]:
        if not is_int(value) or value < minimum:
            return [Problem(path, f"must be an integer >= {minimum}{note}, got {show(value)}")]
        if maximum is None or value <= maximum:
            return []
        want = f"must be an integer from {minimum} to {maximum}{note}"
        return [Problem(path, f"{want}, got {show(value)}{beyond}")]

    return check


def aws_integer(minimum: int, note: str = "") -> Check:
    """An integer >= ``minimum`` that an AWS ``Integer`` holds: at most 2147483647.

    botocore sends any Python int; AWS refuses one past 32 bits, so the file says so first.
    """
    beyond = " (larger than an AWS Integer, 32 bits)"
    return integer(minimum, note, maximum=MAX_AWS_INTEGER, beyond=beyond)


def number(minimum: float, *, strict: bool = False, of: str = "") -> Check:
    sign = ">" if strict else ">="

    def check(value: object, path: str) -> list[Problem]:
        if is_number(value) and (value > minimum if strict else value >= minimum):
            return []
        return [Problem(path, f"must be a number{of} {sign} {minimum:g}, got {show(value)}")]

    return check


def boolean(value: object, path: str) -> list[Problem]:
    if isinstance(value, bool):
        return []
    return [Problem(path, f"must be true or false, got {show(value)}")]


def choice(kind: type[enum.Enum]) -> Check:
    allowed = [str(member.value) for member in kind]

    def check(value: object, path: str) -> list[Problem]:
        if isinstance(value, str) and value in allowed:
            return []
        hint = did_you_mean(value, allowed)
        return [Problem(path, f"must be one of {', '.join(allowed)}, got {show(value)}{hint}")]

    return check


def did_you_mean(word: object, choices: Sequence[str]) -> str:
    """`` (did you mean X?)`` for the closest choice, ignoring case; else nothing."""
    if not isinstance(word, str):
        return ""
    folded = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.lower(), list(folded), n=1)
    return f" (did you mean {folded[close[0]]}?)" if close else ""


def show(value: object) -> str:
    """A found value as the user wrote it in YAML, short enough for one line."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and len(value) > _LONGEST_SHOWN:
        return f"{value[:_LONGEST_SHOWN]!r}... ({len(value)} characters)"
    if isinstance(value, Mapping):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, list | tuple):
        return "a list" if value else "an empty list"
    return repr(value)
