"""Target resolution: ids and mentions, conversation names, the guild search, the bot and bridges."""

from __future__ import annotations

import pytest

from kioku.domain.ltm.targets import TargetKind, resolve_target
from kioku.domain.models import Participant
from tests.unit.ltm_fakes import (
    ALICE,
    BOB,
    BRIDGED,
    MARY,
    SAM_ONE,
    SAM_TWO,
    SERVER,
    make_turn,
    member_lookup,
    members,
)


def member(user_id: str, username: str, *, nick=None, global_name=None, bot=False) -> dict:
    return {
        "user": {"id": user_id, "username": username, "global_name": global_name, "bot": bot},
        "nick": nick,
    }


class Search:
    def __init__(self, members: list[dict]) -> None:
        self.members = members
        self.queries: list[tuple[str, str]] = []

    def __call__(self, guild_id: str, query: str) -> list[dict]:
        self.queries.append((guild_id, query))
        return self.members


@pytest.mark.parametrize("target", ["<@102>", "<@!102>", " <@102> "])
def test_a_mention_of_a_participant_finds_them(target):
    resolution = resolve_target(target, make_turn(), members(Search([]), member_lookup))
    assert resolution.kind is TargetKind.USER
    assert resolution.user.user_id == BOB.user_id
    assert resolution.user.display_name == "Bob"


def test_an_id_outside_the_conversation_is_a_target_only_if_a_member_of_the_guild():
    # Given Sam, a member who is not in the conversation, and an id nobody in the guild has
    search = Search([])
    # When each is named by id
    member_found = resolve_target(f"<@{SAM_ONE.user_id}>", make_turn(), members(search, member_lookup))
    stranger = resolve_target("123456789012345678", make_turn(), members(search, member_lookup))
    mention = resolve_target("<@123456789012345678>", make_turn(), members(search, member_lookup))
    # Then the member is found under their guild name, the stranger is not, and nobody was searched
    assert member_found.kind is TargetKind.USER
    assert (member_found.user.user_id, member_found.user.display_name) == (SAM_ONE.user_id, "Sam")
    assert stranger.kind is mention.kind is TargetKind.NOT_FOUND
    assert search.queries == []


def test_without_a_member_lookup_nobody_is_a_target():
    assert resolve_target("<@102>", make_turn(), members(Search([]), None)).kind is TargetKind.NOT_FOUND
    assert resolve_target("Bob", make_turn(), members(Search([]), None)).kind is TargetKind.NOT_FOUND


def test_someone_who_left_the_guild_is_not_a_target_even_by_name():
    def only_alice(guild_id: str, user_id: str):
        return member_lookup(guild_id, user_id) if user_id == ALICE.user_id else None

    assert resolve_target("Bob", make_turn(), members(Search([]), only_alice)).kind is TargetKind.NOT_FOUND
    assert resolve_target("Alice", make_turn(), members(Search([]), only_alice)).kind is TargetKind.USER


def test_a_name_of_someone_who_left_goes_on_down_the_ladder_to_a_member_of_that_name():
    def only_alice(guild_id: str, user_id: str):
        return member_lookup(guild_id, user_id) if user_id == ALICE.user_id else None

    search = Search([member("201", "bob")])
    resolution = resolve_target("Bob", make_turn(), members(search, only_alice))
    assert (resolution.kind, resolution.user.user_id) == (TargetKind.USER, "201")


@pytest.mark.parametrize("target", ["Alice", "alice", "<@101>", "101"])
def test_in_a_direct_message_the_partner_is_the_only_person(target):
    turn = make_turn(guild_id=None)
    resolution = resolve_target(target, turn, members(Search([]), member_lookup))
    assert (resolution.kind, resolution.user.user_id) == (TargetKind.USER, ALICE.user_id)


@pytest.mark.parametrize("target", ["Bob", "<@102>", "102", "123456789012345678"])
def test_in_a_direct_message_nobody_else_is_a_target(target):
    search = Search([member("102", "bob")])
    turn = make_turn(guild_id=None)
    assert resolve_target(target, turn, members(search, member_lookup)).kind is TargetKind.NOT_FOUND
    assert search.queries == []


@pytest.mark.parametrize(
    ("target", "user_id"),
    [
        ("Alice", ALICE.user_id),
        ("  @alice ", ALICE.user_id),
        ("ALICE", ALICE.user_id),
        ("Bob", BOB.user_id),
        ("bobby", BOB.user_id),
        ("@bob", BOB.user_id),
        ("mary jane", MARY.user_id),
        ("Mary \t Jane", MARY.user_id),
    ],
)
def test_participants_match_on_any_known_name(target, user_id):
    search = Search([member("999", "someone")])
    resolution = resolve_target(target, make_turn(), members(search, member_lookup))
    assert resolution.kind is TargetKind.USER
    assert resolution.user.user_id == user_id
    assert search.queries == []


@pytest.mark.parametrize(
    "target", ["Kioku", "kioku", "@Kiki", "Kioku Bot", "kioku_bot", "900", "<@900>", "<@!900>"]
)
def test_naming_the_bot_itself_is_reported(target):
    assert resolve_target(target, make_turn(), members(Search([]), member_lookup)).kind is TargetKind.BOT_SELF


def test_a_bridged_participant_is_reported_as_a_bridge():
    resolution = resolve_target("carol[m]", make_turn(), members(Search([]), None))
    assert resolution.kind is TargetKind.BRIDGE
    assert resolution.user.user_id == BRIDGED.user_id


def test_another_bot_falls_back_to_the_server():
    assert (
        resolve_target("<@105>", make_turn(), members(Search([]), member_lookup)).kind is TargetKind.OTHER_BOT
    )
    assert (
        resolve_target("dicebot", make_turn(), members(Search([]), member_lookup)).kind
        is TargetKind.OTHER_BOT
    )


def test_a_primary_name_wins_over_a_nickname_in_the_conversation():
    # Given Sam One, whose nickname is Sam, and Sam Two, whose global name is Sam
    turn = make_turn(participants=(ALICE, SAM_ONE, SAM_TWO))
    # When the model names "sam", Then the ladder decides: the global name wins
    resolution = resolve_target("sam", turn, members(Search([]), member_lookup))
    assert resolution.kind is TargetKind.USER
    assert resolution.user.user_id == SAM_TWO.user_id


def test_two_participants_with_the_name_on_the_same_tier_are_ambiguous_with_labels():
    nick_one = Participant("106", "sam1", nickname="Sam")
    nick_two = Participant("107", "sam2", nickname="Sam")
    turn = make_turn(participants=(ALICE, nick_one, nick_two))
    resolution = resolve_target("sam", turn, members(Search([]), member_lookup))
    assert resolution.kind is TargetKind.AMBIGUOUS
    assert resolution.candidates == ("Sam (@sam1)", "Sam (@sam2)")


def test_a_member_found_by_the_search_wins_over_a_webhook_persona_of_the_same_name():
    # Given a bridged (webhook) persona called carol[m] in the conversation, and a member of that name
    search = Search([member("201", "carol[m]")])
    # When the model names carol[m], Then the member is the target; the persona only when nobody is
    resolution = resolve_target("carol[m]", make_turn(), members(search, None))
    assert (resolution.kind, resolution.user.user_id) == (TargetKind.USER, "201")
    assert resolve_target("carol[m]", make_turn(), members(Search([]), None)).kind is TargetKind.BRIDGE


def test_a_member_without_any_name_is_named_by_a_mention_never_a_bare_id():
    lookup = lambda guild_id, user_id: {"user": {"id": user_id, "username": ""}, "nick": None}  # noqa: E731
    resolution = resolve_target("<@123456789012345678>", make_turn(), members(Search([]), lookup))
    assert resolution.user.display_name == "<@123456789012345678>"


@pytest.mark.parametrize(
    "found",
    [
        member("201", "zed", nick="Zee"),
        member("201", "zed", global_name="Zee"),
        member("201", "zee"),
    ],
)
def test_the_guild_search_matches_nickname_global_name_and_username(found):
    # Given nobody in the conversation is called Zee, and the guild search finds them
    search = Search([member("299", "zeeland"), found])
    # When
    resolution = resolve_target("@Zee", make_turn(), members(search, None))
    # Then the search was asked without the @, and only the exact name matched
    assert search.queries == [(SERVER, "Zee")]
    assert resolution.kind is TargetKind.USER
    assert resolution.user.user_id == "201"


def test_the_guild_search_ignores_bots():
    search = Search([member("201", "zee", bot=True), member("900", "zee")])
    assert resolve_target("zee", make_turn(), members(search, None)).kind is TargetKind.NOT_FOUND


def test_the_guild_search_tolerates_malformed_members():
    search = Search([{"nick": "Zee"}, {"user": "zee"}, "zee", member("201", "zee")])
    assert resolve_target("zee", make_turn(), members(search, None)).user.user_id == "201"


def test_many_guild_matches_show_three_candidates():
    search = Search(
        [
            member("301", "rin_a", nick="Rin"),
            member("302", "rin_b", global_name="Rin"),
            member("303", "rin"),
            member("304", "rin_d", nick="Rin"),
        ]
    )
    resolution = resolve_target("rin", make_turn(), members(search, None))
    # the ladder cannot decide between the two primary names; the nicknames are not candidates
    assert resolution.kind is TargetKind.AMBIGUOUS
    assert resolution.candidates == ("Rin (@rin_b)", "rin")


def test_many_guild_matches_on_one_tier_show_three_candidates():
    search = Search([member(str(300 + n), f"rin_{n}", nick="Rin") for n in range(5)])
    resolution = resolve_target("rin", make_turn(), members(search, None))
    assert resolution.kind is TargetKind.AMBIGUOUS
    assert resolution.candidates == ("Rin (@rin_0)", "Rin (@rin_1)", "Rin (@rin_2)")


def test_a_guild_member_by_username_wins_over_another_by_nickname():
    search = Search([member("301", "rin_a", nick="Rin"), member("303", "rin")])
    resolution = resolve_target("rin", make_turn(), members(search, None))
    assert (resolution.kind, resolution.user.user_id) == (TargetKind.USER, "303")


def test_nobody_by_that_name_is_not_found():
    assert resolve_target("Nobody", make_turn(), members(Search([]), None)).kind is TargetKind.NOT_FOUND


def test_a_direct_message_does_not_search_a_guild():
    search = Search([member("201", "zee")])
    resolution = resolve_target("zee", make_turn(guild_id=None), members(search, None))
    assert resolution.kind is TargetKind.NOT_FOUND
    assert search.queries == []


def test_blank_after_trimming_is_not_found():
    assert resolve_target(" @ ", make_turn(), members(Search([]), None)).kind is TargetKind.NOT_FOUND


@pytest.mark.parametrize(
    ("target", "user_id"),
    [
        ("Master Bob", BOB.user_id),
        ("bob-san", BOB.user_id),
        ("Bobby-kun", BOB.user_id),
        ("Dr. Alice", ALICE.user_id),
        ("@Lady Mary Jane", MARY.user_id),
        ("aliceさん", ALICE.user_id),
    ],
)
def test_a_name_with_a_title_or_an_honorific_finds_the_person(target, user_id):
    # seed 003: affixed labels ("Master Sparrow") resolve on the ladder
    resolution = resolve_target(
        target, make_turn(), members(Search([member("999", "someone")]), member_lookup)
    )
    assert (resolution.kind, resolution.user.user_id) == (TargetKind.USER, user_id)


def test_someone_whose_name_carries_the_affix_is_found_first():
    search = Search([member("301", "master bob")])
    resolution = resolve_target("Master Bob", make_turn(), members(search, member_lookup))
    assert (resolution.kind, resolution.user.user_id) == (TargetKind.USER, "301")
    assert search.queries == [(SERVER, "Master Bob")]


def test_affixes_alone_or_around_the_bot_resolve_as_the_rest_of_the_ladder_says():
    assert (
        resolve_target("Master", make_turn(), members(Search([]), member_lookup)).kind is TargetKind.NOT_FOUND
    )
    assert (
        resolve_target("Kioku-san", make_turn(), members(Search([]), member_lookup)).kind
        is TargetKind.BOT_SELF
    )
    dm = resolve_target("Alice-chan", make_turn(guild_id=None), members(Search([]), member_lookup))
    assert (dm.kind, dm.user.user_id) == (TargetKind.USER, ALICE.user_id)
