"""Items to and from DynamoDB's attribute values, exactly as boto3's ``TypeSerializer`` and
``TypeDeserializer`` make them (``tests/unit/test_dynamodb_wire.py`` compares them over random
items), without importing boto3: its package loads boto3's session and botocore, most of a relayed
message's cold start when it reads the server's configuration (docs/operations.md's Cold starts).

A binary is read as boto3's ``Binary``, as its deserialiser reads it (``ltm_items`` expects it):
boto3 is imported then, for the long-term memory's vectors, never for a configuration."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Set
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import Any, overload

from kioku.adapters.dynamodb.keys import Item

DYNAMODB_CONTEXT = Context(
    Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow]
)
"""boto3's: DynamoDB's numbers, and an error for any it would round."""


def to_wire(item: Mapping[str, Any]) -> dict[str, Any]:
    """``item``'s attributes as attribute values; those that are None are left out."""
    return {name: serialize(value) for name, value in item.items() if value is not None}


@overload
def from_wire(item: Mapping[str, Any]) -> Item: ...
@overload
def from_wire(item: Mapping[str, Any] | None) -> Item | None: ...
def from_wire(item: Mapping[str, Any] | None) -> Item | None:
    if item is None:
        return None
    return {name: deserialize(value) for name, value in item.items()}


def _binary_types() -> tuple[type, ...]:
    # boto3's Binary can only be in hand if its module was imported
    types = sys.modules.get("boto3.dynamodb.types")
    return (bytearray, bytes) if types is None else (types.Binary, bytearray, bytes)


def _is_number(value: Any) -> bool:
    if isinstance(value, float):
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    return isinstance(value, int | Decimal)  # a bool too, inside a set (as boto3 has it)


def _is_binary(value: Any) -> bool:
    return isinstance(value, _binary_types())


def _all(value: Iterable[Any], check: Callable[[Any], bool]) -> bool:
    # boto3's ``False not in map(check, value)``: it stops at the first miss, before a later float
    return False not in map(check, value)


def serialize(value: Any) -> dict[str, Any]:
    """boto3's ``TypeSerializer().serialize``, rule for rule and in its order."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if _is_number(value):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": value}
    if _is_binary(value):
        return {"B": _bytes(value)}
    if isinstance(value, Set):
        if _all(value, _is_number):
            return {"NS": [_number(n) for n in value]}
        if _all(value, lambda v: isinstance(v, str)):
            return {"SS": list(value)}
        if _all(value, _is_binary):
            return {"BS": [_bytes(b) for b in value]}
    if isinstance(value, Mapping):
        return {"M": {k: serialize(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [serialize(v) for v in value]}
    raise TypeError(f'Unsupported type "{type(value)}" for value "{value}"')


def _number(value: Any) -> str:
    number = str(DYNAMODB_CONTEXT.create_decimal(value))
    if number in ["Infinity", "NaN"]:
        raise TypeError("Infinity and NaN not supported")
    return number


def _bytes(value: Any) -> Any:
    return value if isinstance(value, bytearray | bytes) else value.value


def _binary(value: Any) -> Any:
    from boto3.dynamodb.types import Binary  # only a vector is binary: see the module's docstring

    return Binary(value)


_READERS: dict[str, Callable[[Any], Any]] = {
    "null": lambda value: None,
    "bool": lambda value: value,
    "n": DYNAMODB_CONTEXT.create_decimal,
    "s": lambda value: value,
    "b": _binary,
    "ns": lambda value: set(map(DYNAMODB_CONTEXT.create_decimal, value)),
    "ss": set,
    "bs": lambda value: set(map(_binary, value)),
    "l": lambda value: [deserialize(v) for v in value],
    "m": lambda value: {k: deserialize(v) for k, v in value.items()},
}


def deserialize(value: Mapping[str, Any]) -> Any:
    """boto3's ``TypeDeserializer().deserialize``: the first key names the type, in any case."""
    if not value:
        raise TypeError("Value must be a nonempty dictionary whose key is a valid dynamodb type.")
    kind = next(iter(value))
    reader = _READERS.get(f"{kind}".lower())
    if reader is None:
        raise TypeError(f"Dynamodb type {kind} is not supported")
    return reader(value[kind])
