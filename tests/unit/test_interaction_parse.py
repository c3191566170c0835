"""The interaction, parsed with the standard library, takes and refuses exactly what the pydantic
model it replaced took and refused (``pydantic_interaction.py``, kept here as the reference): the
same values from the same payloads, over the payloads kioku's tests and events send, mutated at
random (keys dropped, values of the wrong type, strings at and past each limit, bad snowflakes,
numbers and booleans written every way pydantic read them). Run once at 20,000 payloads and 60,000
numeric strings when it was written; a few hundred each time the suite runs."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from kioku.discord.interaction import Interaction, MalformedInteraction, parse_interaction
from kioku.discord.lax import NotLax, lax_bool, lax_int
from kioku.playground.events import (
    autocomplete_typing,
    component_click,
    message_command,
    modal_submit,
    slash_command,
)
from kioku.services.commands.router import InvalidInteraction, route_interaction
from tests.unit import pydantic_interaction as reference

APP = "100000000000000001"
EVENTS = Path(__file__).resolve().parents[2] / "events"
FIELDS = ("id", "application_id", "type", "token", "data", "guild_id", "channel_id", "channel", "member")
FIELDS += ("user", "locale", "app_permissions", "context")


def _discord_sample() -> dict[str, Any]:
    """An interaction as Discord sends it, with the fields kioku ignores (guild_locale, entitlements…)."""
    payload = slash_command(APP, "chat", None, {"message": "hi", "persona": "Luna"})
    payload["member"] |= {
        "avatar": None,
        "joined_at": "2026-01-01T00:00:00.000000+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "premium_since": None,
        "communication_disabled_until": None,
        "roles": ["700000000000000001", "700000000000000002"],
        "nick": "Ally",
        "permissions": "2248473465835073",
    }
    payload["member"]["user"] |= {"avatar": "abc", "discriminator": "0", "public_flags": 0, "bot": False}
    payload["channel"] |= {"name": "general", "guild_id": "200000000000000001", "nsfw": False}
    return payload | {
        "locale": "en-GB",
        "guild_locale": "en-US",
        "app_permissions": "562949953421311",
        "entitlements": [],
        "authorizing_integration_owners": {"0": "200000000000000001"},
        "attachment_size_limit": 10485760,
    }


def _seeds() -> list[dict[str, Any]]:
    chat = slash_command(APP, "chat", None, {"message": "hi"})
    dm = slash_command(APP, "chat", None, {"message": "hi"}, guild_id=None)
    thread = slash_command(APP, "server", "memories list", parent_channel_id="300000000000000009")
    target = {"id": "800000000000000001", "channel_id": "300000000000000001", "author": {"id": "1"}}
    from_events = json.loads(json.loads((EVENTS / "interactions-help-stm.json").read_text())["body"])
    return [
        chat,
        dm,
        thread,
        _discord_sample(),
        from_events,
        message_command(APP, "Remember this", "800000000000000001", target=target),
        modal_submit(chat, "persona:edit:1", {"prompt": "be kind"}),
        autocomplete_typing(chat, "persona", "Lu"),
        component_click(dm, "memories:page:2"),
    ]


SEEDS = _seeds()
WHITE = "\t\n\x0b\x0c\r \x1c\x1f\x85\xa0\u2002\u2028\u3000"
NUMERIC_TEXT = st.text(alphabet="0123456789+-_.eE" + WHITE + "١１x", max_size=12)
BOOL_WORDS = st.sampled_from(
    ["true", "False", "YES", "y", "No", "on", "OFF", "t", "f", "1", "0", " 1", "tru"]
)
TEXTS = st.one_of(
    st.text(max_size=8),
    st.text(alphabet="0123456789", min_size=1, max_size=22),  # snowflakes at and past 20 digits
    st.text(alphabet="0123456789", min_size=38, max_size=42),  # permissions at and past 40 digits
    st.sampled_from([64, 65, 100, 101, 1024, 1025]).map(lambda n: "x" * n),
    st.sampled_from(["\ud800", "a\udfff", "é" * 65, "١٢٣", "1\n", " 1", "", "0" * 20 + "1"]),
    NUMERIC_TEXT,
    BOOL_WORDS,
)
NUMBERS = st.one_of(
    st.integers(min_value=-10, max_value=10),
    st.integers(),
    st.sampled_from([2**63, -(2**63), 2**64, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 9.223372036854775e18, 2.0**63, 1e20]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXTS)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["id", "name", "user", "x"]), inner)
    ),
    max_leaves=6,
)
KEYS = {
    "": [*FIELDS, "version"],
    "member": ["user", "nick", "roles", "permissions", "avatar"],
    "member.user": ["id", "username", "global_name", "bot"],
    "user": ["id", "username", "global_name", "bot"],
    "channel": ["id", "type", "name", "parent_id"],
    "data": ["name", "options", "custom_id"],
}


def _container(payload: dict[str, Any], where: str) -> dict[str, Any] | None:
    node: Any = payload
    for key in where.split(".") if where else []:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


@st.composite
def payloads(draw: st.DrawFn) -> dict[str, Any]:
    """A seed with up to four mutations: a key dropped, or set to a value of any kind."""
    payload = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        where = draw(st.sampled_from(sorted(KEYS)))
        node = _container(payload, where)
        if node is None:
            continue
        key = draw(st.sampled_from(KEYS[where]))
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            node.pop(key, None)
        else:
            node[key] = draw(VALUES)
    return payload


def _shape(value: Any) -> Any:
    """A value with the type of every part spelt out (so 1 and True, "1" and 1 differ)."""
    if isinstance(value, BaseModel):
        return (
            type(value).__name__,
            {name: _shape(getattr(value, name)) for name in type(value).model_fields},
        )
    if hasattr(value, "__dataclass_fields__"):
        return (
            type(value).__name__,
            {name: _shape(getattr(value, name)) for name in value.__dataclass_fields__},
        )
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(item) for item in value])
    if isinstance(value, dict):
        return ("dict", {key: _shape(item) for key, item in value.items()})
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _by_pydantic(payload: Any) -> Any:
    try:
        parsed = reference.Interaction.model_validate(payload)
    except ValidationError:
        return "refused"
    return {name: _shape(getattr(parsed, name)) for name in FIELDS}


def _by_kioku(payload: Any) -> Any:
    try:
        parsed = parse_interaction(payload)
    except MalformedInteraction as exc:
        assert exc.reason  # named, for the log line
        return "refused"
    return {name: _shape(getattr(parsed, name)) for name in FIELDS}


@pytest.mark.parametrize("payload", SEEDS, ids=lambda payload: str(payload["data"].get("name") or "form"))
def test_every_seed_is_taken_with_the_same_values(payload):
    assert _by_kioku(payload) == _by_pydantic(payload) != "refused"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads())
@example({**SEEDS[0], "token": "\ud800"})
@example({**SEEDS[1], "user": {"id": "1", "username": None}})
@example({**SEEDS[0], "member": {**SEEDS[0]["member"], "permissions": None}})
@example({**SEEDS[0], "type": " 2.00\u3000"})
@example({**SEEDS[0], "context": "0_0_1"})
def test_mutated_payloads_are_taken_and_refused_as_pydantic_did(payload):
    assert _by_kioku(payload) == _by_pydantic(payload)


@settings(max_examples=500, deadline=None)
@given(st.one_of(SCALARS, st.lists(SCALARS, max_size=2), st.text(alphabet="0_", max_size=12)))
def test_a_number_or_a_boolean_is_read_as_pydantic_read_it(value):
    from pydantic import TypeAdapter

    for kind, read in ((int, lax_int), (bool, lax_bool)):
        try:
            expected: Any = ("read", _shape(TypeAdapter(kind).validate_python(value)))
        except ValidationError:
            expected = "refused"
        try:
            got: Any = ("read", _shape(read(value)))
        except NotLax:
            got = "refused"
        assert got == expected, kind


@pytest.mark.parametrize("payload", [None, [], [SEEDS[0]], "{}", 2, {}])
def test_what_is_no_object_or_an_empty_one_is_refused_by_both(payload):
    assert _by_kioku(payload) == _by_pydantic(payload) == "refused"


@pytest.mark.parametrize(
    "value",
    [
        "9" * 4300,
        "9" * 4301,
        "0" * 5000 + "1",
        "-" + "0" * 5000 + "9" * 4300,
        "9_" * 4299 + "9",
        "9_" * 4300 + "9",
    ],
)
def test_integers_of_thousands_of_digits_are_bounded_as_pydantic_bounded_them(value):
    payload = {**SEEDS[0], "context": value}
    assert _by_kioku(payload) == _by_pydantic(payload)


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("id", "1" * 21),
        ("application_id", 100000000000000001),
        ("type", 9),
        ("token", "t" * 1025),
        ("member", {"user": {"id": "١٢٣"}}),
        ("channel", {"id": "300000000000000001", "name": "n" * 101}),
    ],
)
def test_the_router_answers_a_malformed_interaction_as_not_one(where, value):
    # a verified body that is no interaction is the endpoint's 400, never a command's reply
    payload = SEEDS[0] | {where: value}
    with pytest.raises(InvalidInteraction, match="not a valid Discord interaction"):
        route_interaction(payload, context=None)  # type: ignore[arg-type]


def test_what_is_taken_is_kiokus_own_types():
    parsed = parse_interaction(_discord_sample())
    assert isinstance(parsed, Interaction)
    assert parsed.member is not None and parsed.member.permissions == 2248473465835073
    assert parsed.member.roles == ("700000000000000001", "700000000000000002")
    assert parsed.channel is not None and parsed.channel.name == "general"
    assert parsed.option_values() == {"message": "hi", "persona": "Luna"}
