"""kioku's attribute-value codec (adapters/dynamodb/wire.py) against boto3's TypeSerializer and
TypeDeserializer, over random items: the same values, and the same errors, both ways."""

from __future__ import annotations

from decimal import Decimal

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.adapters.dynamodb import wire

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.decimals(places=3, min_value=-(10**6), max_value=10**6),
)
binaries = st.one_of(
    st.binary(max_size=8), st.binary(max_size=8).map(bytearray), st.binary(max_size=8).map(Binary)
)
scalars = st.one_of(
    st.none(), st.booleans(), numbers, st.text(max_size=8), binaries, st.floats(allow_nan=False)
)
sets = st.one_of(
    st.frozensets(
        st.one_of(st.integers(), st.booleans(), st.decimals(places=2, allow_nan=False, allow_infinity=False)),
        max_size=4,
    ),
    st.sets(st.text(max_size=4), max_size=4),
    st.sets(st.binary(max_size=4), max_size=4),
    st.sets(st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=False)), max_size=4),
)
values = st.recursive(
    st.one_of(scalars, sets),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
    ),
    max_leaves=12,
)


def outcome(function, value):
    try:
        return "ok", function(value)
    except Exception as exc:  # the same error, of the same class and words
        return "error", (type(exc), str(exc))


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.text(max_size=6), values, max_size=5))
def test_items_go_to_the_wire_as_boto3_sends_them(item):
    boto3_serializer = TypeSerializer()
    expected = outcome(
        lambda i: {k: boto3_serializer.serialize(v) for k, v in i.items() if v is not None}, item
    )
    assert outcome(wire.to_wire, item) == expected


wire_values = st.recursive(
    st.one_of(
        st.just({"NULL": True}),
        st.booleans().map(lambda b: {"BOOL": b}),
        st.one_of(st.integers(), st.decimals(allow_nan=True)).map(lambda n: {"N": str(n)}),
        st.sampled_from(["1e-130", "1e127", "0.1234567890123456789012345678901234567891", "x"]).map(
            lambda n: {"N": n}
        ),
        st.text(max_size=6).map(lambda s: {"S": s}),
        st.binary(max_size=6).map(lambda b: {"B": b}),
        st.lists(st.integers().map(str), max_size=3).map(lambda ns: {"NS": ns}),
        st.lists(st.text(max_size=3), max_size=3).map(lambda ss: {"SS": ss}),
        st.lists(st.binary(max_size=3), max_size=3).map(lambda bs: {"BS": bs}),
        st.sampled_from([{}, {"X": 1}, {"s": "lower"}, {"Null": True}]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: {"L": items}),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(lambda m: {"M": m}),
    ),
    max_leaves=10,
)


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.text(max_size=6), wire_values, max_size=5))
def test_items_come_from_the_wire_as_boto3_reads_them(item):
    boto3_deserializer = TypeDeserializer()
    expected = outcome(lambda i: {k: boto3_deserializer.deserialize(v) for k, v in i.items()}, item)
    mine = outcome(wire.from_wire, item)
    # by repr: a NaN equals no NaN, and a binary must be boto3's Binary, as ltm_items reads it
    assert repr(mine) == repr(expected)


def test_a_number_dynamodb_would_round_is_refused_as_boto3_refuses_it():
    with pytest.raises(Exception) as mine:
        wire.to_wire({"n": Decimal("0.12345678901234567890123456789012345678901")})
    with pytest.raises(Exception) as theirs:
        TypeSerializer().serialize(Decimal("0.12345678901234567890123456789012345678901"))
    assert type(mine.value) is type(theirs.value)
