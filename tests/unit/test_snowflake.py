"""The one rule for Discord ids, as a function, as the pattern the settings validate with, and as the
interaction's parser applies it."""

from __future__ import annotations

import re

import pytest

from kioku.discord.interaction import MalformedInteraction, parse_interaction
from kioku.discord.snowflake import SNOWFLAKE_PATTERN, is_snowflake

IDS = ["0", "7", "100000000000000001", "1" * 20, "18446744073709551615"]
NOT_IDS = [
    "",
    "1" * 21,
    "١٢٣",  # Arabic-Indic digits: str.isdigit() and \d take them, int() reads them
    "１２３",  # fullwidth digits
    "12३",  # a Devanagari digit at the end
    "-1",
    "+1",
    " 1",
    "1 ",
    "1\n",
    "12a",
    "1_000",
]


def interaction_user(user_id: str):
    """The user of a DM interaction as the endpoint validates it."""
    payload = {"id": "1", "application_id": "2", "type": 2, "token": "t", "user": {"id": user_id}}
    return parse_interaction(payload).user


def interaction_member_user(user_id: str):
    """The member's user of a server interaction as the endpoint validates it."""
    payload = {"id": "1", "application_id": "2", "type": 2, "token": "t", "member": {"user": {"id": user_id}}}
    member = parse_interaction(payload).member
    assert member is not None
    return member.user


@pytest.mark.parametrize("value", IDS)
def test_ascii_digit_strings_of_1_to_20_digits_are_ids(value):
    assert is_snowflake(value)
    assert re.fullmatch(SNOWFLAKE_PATTERN, value)
    assert interaction_user(value).id == interaction_member_user(value).id == value


@pytest.mark.parametrize("value", NOT_IDS)
def test_anything_else_is_not_an_id_for_the_function_nor_for_the_interaction(value):
    assert not is_snowflake(value)
    with pytest.raises(MalformedInteraction, match=r"^user\.id is not a snowflake"):
        interaction_user(value)
    with pytest.raises(MalformedInteraction, match=r"^member\.user\.id is not a snowflake"):
        interaction_member_user(value)


@pytest.mark.parametrize("value", [123, True, None, 1.0, b"123", ["1"]])
def test_an_id_is_a_string_as_discord_writes_it(value):
    assert not is_snowflake(value)
