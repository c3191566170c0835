"""What a real model sends to the memory tools, and what comes back for each mistake."""

from __future__ import annotations

import pytest

from kioku.domain.ltm.arguments import (
    InvalidArguments,
    Problem,
    RequestedScope,
    clean_content,
    parse_create_arguments,
    parse_update_arguments,
)
from kioku.domain.ltm.memory import PersonalLedger, content_fingerprint, new_memory_id

MAX = 1000


def test_create_arguments_accept_a_json_string_and_trim_content():
    parsed = parse_create_arguments(
        '{"memory_content": "  {user} likes tea ", "memory_scope": "Target_User", "target_user": " Alice "}',
        MAX,
    )
    assert parsed.content == "{user} likes tea"
    assert parsed.scope is RequestedScope.TARGET_USER
    assert parsed.target_user == "Alice"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not json", Problem.ARGUMENTS),
        ("[1, 2]", Problem.ARGUMENTS),
        ({"memory_scope": "server_wide"}, Problem.ARGUMENTS),
        ({"memory_content": 42, "memory_scope": "server_wide"}, Problem.ARGUMENTS),
        ({"memory_content": ["a fact"], "memory_scope": "server_wide"}, Problem.ARGUMENTS),
        ({"memory_content": "a fact"}, Problem.ARGUMENTS),
        ({"memory_content": "a fact", "memory_scope": True}, Problem.ARGUMENTS),
        ({"memory_content": "a fact", "memory_scope": "global"}, Problem.SCOPE),
        ({"memory_content": "a fact", "memory_scope": "target_user"}, Problem.ARGUMENTS),
        (
            {"memory_content": "a fact", "memory_scope": "target_user", "target_user": "   "},
            Problem.ARGUMENTS,
        ),
        (
            {"memory_content": "a fact", "memory_scope": "target_user", "target_user": {"a": 1}},
            Problem.ARGUMENTS,
        ),
        ({"memory_content": "   ", "memory_scope": "server_wide"}, Problem.CONTENT),
        ({"memory_content": "x" * 1001, "memory_scope": "server_wide"}, Problem.CONTENT),
    ],
)
def test_create_arguments_name_each_mistake(raw, problem):
    with pytest.raises(InvalidArguments) as raised:
        parse_create_arguments(raw, MAX)
    assert raised.value.problem is problem
    assert raised.value.message


def test_exactly_the_limit_is_accepted():
    parsed = parse_create_arguments({"memory_content": "x" * 1000, "memory_scope": "server_wide"}, MAX)
    assert len(parsed.content) == 1000


def test_a_numeric_target_is_taken_as_an_id():
    parsed = parse_create_arguments(
        {"memory_content": "a fact", "memory_scope": "target_user", "target_user": 123456789012345678}, MAX
    )
    assert parsed.target_user == "123456789012345678"


def test_clean_content_unwraps_unknown_placeholders_and_keeps_tokens():
    # Issue 11.4 changed this: only the braces of an unknown placeholder go, as seed 003's original
    assert clean_content("{obonya} says {user} owes {bot} a {cake}") == "obonya says {user} owes {bot} a cake"
    assert clean_content("{Bob} plays chess") == "Bob plays chess"


@pytest.mark.parametrize(
    "written",
    ["{{user}} sings with {{char}}", "{{ User }} sings with {char}", "{user} sings with {{bot}}"],
)
def test_character_card_tokens_are_read_as_the_user_and_the_bot(written):
    assert clean_content(written) == "{user} sings with {bot}"


def test_miscased_tokens_are_kept_as_tokens():
    assert clean_content("{User} met {BOT}") == "{user} met {bot}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [(12345, "12345"), ("12345", "12345"), ("#12345", "12345"), ("[#12345]", "12345"), (" 012345 ", "12345")],
)
def test_update_accepts_the_id_as_the_model_quotes_it(given, expected):
    parsed = parse_update_arguments({"memory_id": given, "memory_content": "new"}, MAX)
    assert parsed.memory_id == expected
    assert not parsed.deletes


@pytest.mark.parametrize("given", [None, True, "abc", -3, 0, 1.5, ["12345"]])
def test_update_refuses_ids_that_are_not_ids(given):
    with pytest.raises(InvalidArguments) as raised:
        parse_update_arguments({"memory_id": given, "memory_content": "new"}, MAX)
    assert raised.value.problem is Problem.ARGUMENTS


def test_blank_update_content_means_delete():
    assert parse_update_arguments({"memory_id": 12345, "memory_content": "  "}, MAX).deletes


def test_update_content_must_be_present_and_short():
    with pytest.raises(InvalidArguments) as missing:
        parse_update_arguments({"memory_id": 12345}, MAX)
    with pytest.raises(InvalidArguments) as too_long:
        parse_update_arguments({"memory_id": 12345, "memory_content": "y" * 1001}, MAX)
    assert missing.value.problem is Problem.ARGUMENTS
    assert too_long.value.problem is Problem.CONTENT


def test_fingerprint_ignores_case_width_and_spacing():
    assert content_fingerprint("{user} likes  TEA") == content_fingerprint("{USER} likes tea")
    assert content_fingerprint("ｔｅａ") == content_fingerprint("tea")
    assert content_fingerprint("tea") != content_fingerprint("coffee")


def test_memory_ids_are_five_digits():
    assert all(len(new_memory_id()) == 5 and new_memory_id().isdigit() for _ in range(200))


def test_personal_ledger_counts_global_memories_in_every_lineage():
    ledger = PersonalLedger(counts={0: 3, 1: 5, 2: 9})
    assert ledger.used_by(1) == 8
    assert ledger.used_by(7) == 3
    assert ledger.used_by(0) == 12  # a new global memory must fit the fullest lineage
    assert ledger.has_room(1, 9) and not ledger.has_room(0, 12)


@pytest.mark.parametrize(("given", "days"), [(None, None), (1, 1), (3650, 3650), ("7", 7), (14.0, 14)])
def test_expiry_is_a_whole_number_of_days_from_one_to_ten_years(given, days):
    raw = {"memory_content": "{user} is in Tokyo", "memory_scope": "server_wide"}
    if given is not None:
        raw["expires_in_days"] = given
    assert parse_create_arguments(raw, 100).expires_in_days == days


@pytest.mark.parametrize("given", [0, -3, 3651, 1.5, True, "soon", [7], {"days": 7}])
def test_an_expiry_out_of_range_or_of_the_wrong_type_is_named(given):
    raw = {"memory_content": "{user} is in Tokyo", "memory_scope": "server_wide", "expires_in_days": given}
    with pytest.raises(InvalidArguments, match="expires_in_days") as refused:
        parse_create_arguments(raw, 100)
    assert refused.value.problem is Problem.ARGUMENTS


@pytest.mark.parametrize(("given", "days"), [(None, None), (0, 0), (1, 1), (3650, 3650), ("30", 30)])
def test_an_update_may_set_an_expiry_or_clear_it_with_zero(given, days):
    raw = {"memory_id": 12345, "memory_content": "{user} is in Tokyo"}
    if given is not None:
        raw["expires_in_days"] = given
    assert parse_update_arguments(raw, 100).expires_in_days == days


@pytest.mark.parametrize("given", [-1, 3651, 2.5, False, "never", [0]])
def test_an_update_expiry_out_of_range_or_of_the_wrong_type_is_named(given):
    raw = {"memory_id": 12345, "memory_content": "{user} is in Tokyo", "expires_in_days": given}
    with pytest.raises(InvalidArguments, match="expires_in_days") as refused:
        parse_update_arguments(raw, 100)
    assert refused.value.problem is Problem.ARGUMENTS
