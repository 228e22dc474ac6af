"""The smallest instance of a msgspec wire struct: every required field filled, every other field left at
its default. Encoded, it is what ``omit_defaults`` leaves of the struct, so a test can check that what a
protocol requires (OpenAI's answers, AG-UI's events) survives even when it equals its default."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar

import msgspec
from msgspec import inspect

S = TypeVar("S", bound=msgspec.Struct)


def minimal(cls: type[S]) -> S:
    """``cls`` with only its required fields set (each to a small valid value; lists hold one item)."""
    info = inspect.type_info(cls)
    assert isinstance(info, inspect.StructType)
    values = {field.name: _value(field.type) for field in info.fields if field.required}
    return cls(**values)


def filled(cls: type[S]) -> S:
    """``cls`` with every field set, the optional ones too (to their first type that is not ``None``),
    so the structs nested in optional fields are on the wire as well (at their smallest)."""
    info = inspect.type_info(cls)
    assert isinstance(info, inspect.StructType)
    return cls(**{field.name: _value(field.type) for field in info.fields})


def encoded(value: msgspec.Struct) -> dict[str, Any]:
    """The JSON object ``value`` encodes to."""
    data = msgspec.json.decode(msgspec.json.encode(value))
    assert isinstance(data, dict)
    return data


def reachable(*roots: type[msgspec.Struct]) -> Iterator[type[msgspec.Struct]]:
    """Every struct type a value of ``roots`` can contain (required or optional fields, unions, lists)."""
    seen: set[type[msgspec.Struct]] = set()
    stack: list[inspect.Type] = [inspect.type_info(root) for root in roots]
    while stack:
        info = stack.pop()
        if isinstance(info, inspect.StructType):
            if info.cls in seen:
                continue
            seen.add(info.cls)
            yield info.cls
            stack.extend(field.type for field in info.fields)
        elif isinstance(info, inspect.UnionType):
            stack.extend(info.types)
        elif isinstance(info, inspect.ListType | inspect.DictType):
            stack.append(info.item_type if isinstance(info, inspect.ListType) else info.value_type)


def _value(info: inspect.Type) -> Any:
    if isinstance(info, inspect.StructType):
        return minimal(info.cls)
    if isinstance(info, inspect.UnionType):
        chosen = [t for t in info.types if not isinstance(t, inspect.NoneType)] or list(info.types)
        return _value(chosen[0])
    if isinstance(info, inspect.LiteralType):
        return info.values[0]
    if isinstance(info, inspect.ListType):
        return [_value(info.item_type)]
    if isinstance(info, inspect.StrType) and info.pattern is not None:
        return next(s for s in ("x", "", "/x") if re.search(info.pattern, s))  # e.g. a JSON Pointer
    simple: dict[type[inspect.Type], Any] = {
        inspect.StrType: "x",
        inspect.IntType: 0,
        inspect.FloatType: 0.0,
        inspect.BoolType: False,
        inspect.DictType: {},
        inspect.AnyType: None,
        inspect.NoneType: None,
    }
    return simple[type(info)]
