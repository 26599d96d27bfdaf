"""Read a quota config (or a scenario) from a YAML or JSON file.

``.json`` files are read as JSON; anything else as YAML, which is a superset of
JSON. Every way a file can be unusable (missing, unreadable, invalid YAML, a
key written twice, a top level that is not a mapping) is a :class:`ConfigError`
whose message says where, so ``airflow-quota validate`` can print it as is.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.exceptions import ConfigError, Problem


def load_config(path: str | Path) -> QueueConfig:
    """The validated quota config in the file at ``path``; raises :class:`ConfigError`."""
    return parse_config(load_mapping(path), source=str(path))


def config_of_text(text: str, source: str) -> QueueConfig:
    """The validated quota config in ``text``, read as the file ``source`` would be."""
    return parse_config(mapping_of_text(text, source), source=source)


def load_mapping(path: str | Path) -> dict[str, Any]:
    """The mapping at the top of the YAML or JSON file at ``path``, not yet validated."""
    return mapping_of_text(_read(Path(path), str(path)), str(path))


def mapping_of_text(text: str, source: str) -> dict[str, Any]:
    """The mapping at the top of ``text`` (JSON if ``source`` ends in ``.json``, else YAML)."""
    is_json = Path(source).suffix.lower() == ".json"
    data = _json(text, source) if is_json else _yaml(text, source)
    if data is None:
        message = "the file is empty; expected a mapping such as job_queue: ..., capacity: ..."
        raise ConfigError([Problem("", message)], source)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"the {type(data).__name__} {data!r}"
        message = f"the top level must be a mapping of keys to values, got {kind}"
        raise ConfigError([Problem("", message)], source)
    return data


def _read(file: Path, source: str) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        message = "no such file"
    except IsADirectoryError:
        message = "is a directory, not a file"
    except PermissionError:
        message = "cannot be read: permission denied"
    except UnicodeDecodeError as error:
        message = f"is not UTF-8 text: {error.reason} at byte {error.start}"
    except OSError as error:
        message = f"cannot be read: {error.strerror or error}"
    raise ConfigError([Problem("", message)], source)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key written twice is an error, not overwritten."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        first: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` may be overridden on purpose
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # the base class reports unhashable keys
            if key in first:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key} (first at line {first[key]})",
                    key_node.start_mark,
                )
            first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _yaml(text: str, source: str) -> object:
    try:
        return yaml.load(
            text, Loader=_UniqueKeyLoader
        )  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as error:
        raise ConfigError([Problem("", _yaml_message(error))], source) from None
    except yaml.YAMLError as error:
        flat = " ".join(str(error).split())
        raise ConfigError([Problem("", f"invalid YAML: {flat}")], source) from None


def _yaml_message(error: yaml.MarkedYAMLError) -> str:
    """Where PyYAML found the problem, and where the construct it was reading began.

    An unclosed ``{`` is only noticed lines later; the context names the line it opened on.
    """
    mark = error.problem_mark
    where = f" at {_position(mark)}" if mark else ""
    message = f"invalid YAML{where}: {error.problem}"
    start = error.context_mark
    if error.context and start and (mark is None or start.line != mark.line):
        message += f" ({error.context} at {_position(start)})"
    return message


def _position(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKeyError(key)
        data[key] = value
    return data


def _json(text: str, source: str) -> object:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise ConfigError([Problem("", f"invalid JSON at {where}: {error.msg}")], source) from None
    except _DuplicateKeyError as error:
        message = f"invalid JSON: duplicate key {error} in one object"
        raise ConfigError([Problem("", message)], source) from None
