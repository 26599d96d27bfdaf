"""Turns a handler's answer into exactly what the operation's output shape allows.

``None`` members are dropped (AWS omits absent fields); anything the shape does
not know, a missing required member or a value outside an enum is a bug in the
emulator, not in the caller, so it raises :class:`ShapeError` and the server
answers 500 instead of sending a response a real client could choke on.
"""

from __future__ import annotations

from typing import Any

from botocore.model import ListShape, MapShape, Shape, StringShape, StructureShape


class ShapeError(Exception):
    """The emulator built a response its own service model does not allow."""


def shape_output(shape: Shape | None, value: dict[str, Any]) -> dict[str, Any]:
    if shape is None:
        return {}
    assert isinstance(shape, StructureShape)
    shaped = _shape(shape, value, shape.name)
    assert isinstance(shaped, dict)
    return shaped


def _shape(shape: Shape, value: Any, path: str) -> Any:
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(shape, StructureShape)
        return _structure(shape, value, path)
    if kind == "list":
        assert isinstance(shape, ListShape)
        _expect(isinstance(value, (list, tuple)), path, "a list", value)
        return [_shape(shape.member, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if kind == "map":
        assert isinstance(shape, MapShape)
        _expect(isinstance(value, dict), path, "a map", value)
        return {str(k): _shape(shape.value, v, f"{path}.{k}") for k, v in value.items()}
    return _scalar(shape, value, path)


def _structure(shape: StructureShape, value: Any, path: str) -> dict[str, Any]:
    _expect(isinstance(value, dict), path, "an object", value)
    result: dict[str, Any] = {}
    for name, item in value.items():
        if item is None:
            continue
        member = shape.members.get(name)
        if member is None:
            raise ShapeError(f"{path}.{name} is not a member of {shape.name}")
        result[name] = _shape(member, item, f"{path}.{name}")
    missing = [name for name in shape.required_members if name not in result]
    if missing:
        raise ShapeError(f"{path} lacks required members {', '.join(missing)}")
    return result


def _scalar(shape: Shape, value: Any, path: str) -> Any:
    kind = shape.type_name
    if kind == "string":
        _expect(isinstance(value, str), path, "a string", value)
        enum = shape.enum if isinstance(shape, StringShape) else []
        if enum and value not in enum:
            raise ShapeError(f"{path}: {value!r} is not one of {enum}")
        return value
    if kind in ("integer", "long"):
        _expect(isinstance(value, int) and not isinstance(value, bool), path, "an int", value)
        return value
    if kind in ("float", "double", "timestamp"):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        _expect(number, path, "a number", value)
        return float(value)
    if kind == "boolean":
        _expect(isinstance(value, bool), path, "a boolean", value)
        return value
    return value


def _expect(ok: bool, path: str, what: str, value: Any) -> None:
    if not ok:
        raise ShapeError(f"{path} must be {what}, got {type(value).__name__} {value!r}")
