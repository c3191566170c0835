"""What the model sees, checked against the seeds (issue 11), through the relay's signed POST, the
FIFO queue on moto and the turn worker, reading the one request the stand-in model received."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kioku.adapters.dynamodb.keys import stm_row_key
from kioku.adapters.dynamodb.ltm_store import BookLayout, DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.config import get_settings
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.models import Persona
from kioku.domain.privacy import Origin
from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.entries import StmAddress
from kioku.domain.stm.update_tool import StmUpdate
from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn, completion_body
from tests.e2e.conftest import relay_post, running_stack, signed_post

pytestmark = pytest.mark.e2e

GUILD = "200000000000000011"
CHANNEL = "300000000000000011"
HEADER = re.compile(r"^\[(?P<speaker>[^|\]]+) \| UserID:(?P<user>\d+) \| MessageID:(?P<message>\d+)\]")


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    with running_stack(llm) as running:
        running.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        yield running


def turn(stack: LocalStack, author: dict[str, Any], text: str, **member: Any) -> dict[str, Any]:
    """``author`` addresses the bot; the relay forwards the message with the author's member object."""
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    response = relay_post(stack, message, GUILD, {"nick": None, "roles": [], **member})
    assert response.status_code == 202, response.text
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    return message


def table(stack: LocalStack) -> KiokuTable:
    return KiokuTable(stack.resources.table_name)


def row_identity() -> StmRowIdentity:
    address = StmAddress.of(GUILD, "", CHANNEL, Persona().persona_id)
    return StmRowIdentity(address=address, lineage_id=Persona().lineage_id, channel_name="general")


def write_summary(stack: LocalStack, summary: str, written_at: datetime) -> None:
    StmStore(table(stack)).write_memory(
        row_identity(), StmUpdate(summary=summary), (), written_at, timedelta(days=90)
    )


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def dialogue(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] != "system" and HEADER.match(text_of(m))]


def test_one_person_keeps_one_label_and_one_name_across_the_history_and_the_live_message(stack, llm):
    # Given Alice wrote earlier (REST history carries no member) and now writes with her nickname
    alice = stack.discord.seed_user("alice", global_name="Alice A")
    stack.discord.seed_member(GUILD, alice, nick="Ally")
    stack.discord.seed_message(CHANNEL, alice, "anyone up for chess?")

    # When her message comes through the relay with its member object
    turn(stack, alice, "I'll bring the board", nick="Ally")

    # Then both of her messages carry the same label and the same name
    turns = dialogue(llm.bodies[0])
    assert [HEADER.match(text_of(t))["speaker"] for t in turns] == ["Ally (alice)", "Ally (alice)"]
    assert {t["name"] for t in turns} == {f"Ally_{alice['id']}"}
    assert "The person who just addressed you is Ally." in llm.bodies[0]["messages"][0]["content"]


def test_a_summary_older_than_a_day_stays_in_an_active_channel(stack, llm):
    # Given a summary written three days ago, and a turn a minute ago that kept the channel active
    alice = stack.discord.seed_user("alice")
    write_summary(stack, "We are planning the chess club.", datetime.now(UTC) - timedelta(days=3))
    turn(stack, alice, "hi")

    # When the channel goes on talking
    turn(stack, alice, "what were we planning?")

    # Then the model still gets the summary, placed as fresh (in the dialogue, not anchored on top)
    messages = llm.bodies[-1]["messages"]
    block = next(i for i, m in enumerate(messages) if "We are planning the chess club." in text_of(m))
    assert messages[block - 1]["role"] != "system"


def test_the_retention_sets_the_ttl_of_the_rows_a_turn_writes(llm):
    # Given a retention longer than the old fixed 90 days
    with running_stack(llm, STM_JANITOR_RETENTION_DAYS="400") as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice")

        # When a turn is captured
        turn(stack, alice, "remember this channel")

        # Then the row expires 400 days on
        row = table(stack).get(stm_row_key(row_identity().address))
    expires = datetime.fromtimestamp(int(row["expires_at"]), UTC)
    assert abs(expires - (datetime.now(UTC) + timedelta(days=400))) < timedelta(minutes=5)


def test_mentions_forwards_and_deleted_replies_read_as_a_person_sees_them(stack, llm):
    # Given a channel where Bob mentions Alice, a role and the channel; Carol forwards a message; and
    # Dan answers a message that was deleted since
    discord = stack.discord
    alice = discord.seed_user("alice", global_name="Alice")
    bob, carol, dan = (discord.seed_user(name) for name in ("bob", "carol", "dan"))
    discord.seed_role(GUILD, "800000000000000077", permissions=0, name="Chess Club")
    discord.seed_message(CHANNEL, bob, f"<@{alice['id']}> <@&800000000000000077> see <#{CHANNEL}>")
    original = discord.seed_message(CHANNEL, alice, "the tournament is on Friday")
    discord.forward_message(CHANNEL, carol, original)
    doomed = discord.seed_message(CHANNEL, alice, "oops, wrong channel")
    discord.seed_message(CHANNEL, dan, "no worries", reply_to=doomed["id"])
    discord.delete_message(CHANNEL, doomed["id"])

    # When Bob addresses the bot, mentioning Alice again
    turn(stack, bob, f"what did <@{alice['id']}> say?")

    # Then the mentions read as names, the forward shows its original, the reply says it lost its message
    texts = [text_of(t) for t in dialogue(llm.bodies[0])]
    assert texts[0].endswith("<som>@Alice @Chess Club see #general<eom>")
    assert "Forwarded message" in texts[2] and texts[2].endswith("<som>the tournament is on Friday<eom>")
    assert "Replying to a message that has since been deleted" in texts[3]
    assert texts[-1].endswith("<som>@Kioku what did @Alice say?<eom>")
    assert "<@" not in "".join(texts) and "<#" not in "".join(texts)

    # ...and the next turn recalls the captured line with names, not ids
    turn(stack, bob, "thanks")
    stored = StmStore(table(stack)).get(row_identity().address)
    assert stored is not None
    assert any(line.text == "@Kioku what did @Alice say?" for line in stored.crude)


def picture(name: str, content_type: str) -> dict[str, Any]:
    return {
        "id": "700000000000000011",
        "filename": name,
        "content_type": content_type,
        "size": 9,
        "url": f"https://cdn.example.test/{name}",
    }


def test_a_request_carries_at_most_max_images_per_request_images_in_formats_a_model_takes(llm):
    with running_stack(llm, MAX_IMAGES_PER_REQUEST="2") as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice")
        stack.discord.seed_message(CHANNEL, alice, "old", attachments=[picture("old.png", "image/png")])
        newer = [
            picture("new.jpg", "image/jpeg"),
            picture("phone.heic", "image/heic"),
            picture("logo.svg", "image/svg+xml"),
        ]
        stack.discord.seed_message(CHANNEL, alice, "new", attachments=newer)
        stack.discord.seed_message(
            CHANNEL, alice, "newest", attachments=[picture("newest.webp", "image/webp")]
        )
        turn(stack, alice, "what do you see?")

    urls = [
        part["image_url"]["url"].rsplit("/", 1)[1]
        for message in llm.bodies[0]["messages"]
        if isinstance(message["content"], list)
        for part in message["content"][1:]
    ]
    assert urls == ["new.jpg", "newest.webp"]
    text = "\n".join(text_of(m) for m in dialogue(llm.bodies[0]))
    for placeholder in ("old.png", "phone.heic", "logo.svg"):
        assert f"[Image Attachment: {placeholder}]" in text


def test_instructions_agree_with_each_other_and_with_what_is_offered(llm):
    # Given a server where self-teaching is off, a persona named as the system prompt calls it, and
    # a memory notification the bot posted earlier
    with running_stack(llm) as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice")
        asked = stack.discord.seed_message(CHANNEL, alice, "do you remember my tea?")
        stack.discord.seed_message(CHANNEL, stack.discord.bot_user, "You like green tea.")
        with stack.discord._lock:
            notice = stack.discord._new_message(CHANNEL, stack.discord.bot_user, "")
            notice["embeds"] = [{"title": "Memory saved", "description": "alice likes green tea"}]
            stack.discord._channels[CHANNEL].append(notice)
        reply = stack.discord.seed_message(CHANNEL, alice, "yes!", reply_to=notice["id"])
        turn(stack, alice, "thanks")

    request = llm.bodies[0]
    texts = [text_of(m) for m in dialogue(request)]
    # Then the bot's turn is headed with the name the system prompt gives it
    assert "You are Kioku" in request["messages"][0]["content"]
    assert texts[1].startswith("[Kioku | UserID:")
    # ...the notification is not an empty assistant turn
    assert [m["role"] for m in dialogue(request)] == ["user", "assistant", "user", "user"]
    assert not any("Memory saved" in text for text in texts)
    assert asked["id"] in texts[0] and reply["id"] in texts[2]


def test_a_mention_of_the_bots_managed_role_starts_a_turn(stack, llm):
    # Given the relay knows the bot's managed role (from GUILD_CREATE) and Alice mentions it
    role = "810000000000000002"
    alice = stack.discord.seed_user("alice")
    message = stack.discord.seed_message(CHANNEL, alice, f"<@&{role}> what's up?")
    data = {**message, "guild_id": GUILD, "member": {"nick": None, "roles": []}, "mention_roles": [role]}
    body = json.dumps({"t": "MESSAGE_CREATE", "d": data, "bot_role_ids": [role]}).encode()

    # When the relay forwards it
    response = signed_post(stack, "relay", body, stack.relay_signing_key)

    # Then it is a turn like a mention of the bot
    assert response.status_code == 202, response.text
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    assert len(llm.bodies) == 1


def test_recall_shows_a_memory_of_the_longest_length_whole(stack, llm):
    # Given a server memory of MAX_MEMORY_LENGTH characters (books once cut it at 900), in 4-byte
    # characters and beside a scope full of others, so that its book takes more than one item
    settings = get_settings()
    store = DynamoMemoryStore(table(stack), layout=BookLayout.from_settings(settings))
    scope = MemoryScope.server(GUILD, Persona().lineage_id)
    here = Origin(GUILD, CHANNEL, private=False)
    long_fact = "{user}'s saga: " + "\N{MUSICAL SYMBOL G CLEF}" * (settings.MAX_MEMORY_LENGTH - 15)
    then = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(settings.MAX_SERVER_MEMORIES - 1):
        store.create(MemoryDraft(scope, f"filler fact {n}", "1", then, origin=here), limit=1000)
    saved = store.create(
        MemoryDraft(scope, long_fact, "1", then + timedelta(days=1), origin=here), limit=1000
    )
    alice = stack.discord.seed_user("alice")
    # When a turn recalls it
    turn(stack, alice, "what do you remember?")
    # Then the model sees every character of it, and every memory of the scope
    recall = next(m for m in llm.bodies[0]["messages"] if "Long-term memories" in text_of(m))
    (line,) = [line for line in text_of(recall).splitlines() if saved.memory_id in line]
    assert "\N{MUSICAL SYMBOL G CLEF}" * (settings.MAX_MEMORY_LENGTH - 15) in line
    assert all(f"filler fact {n}" in text_of(recall) for n in range(settings.MAX_SERVER_MEMORIES - 1))


def test_the_target_ladder_takes_a_username_over_a_nickname_and_the_result_names_the_person(stack, llm):
    # Given two members nobody in the conversation is: one whose nickname is Rin, one whose username is rin
    nicknamed = stack.discord.seed_user("rin_a")
    stack.discord.seed_member(GUILD, nicknamed, nick="Rin")
    named = stack.discord.seed_user("rin", global_name="Rin Tohsaka")
    stack.discord.seed_member(GUILD, named)
    alice = stack.discord.seed_user("alice")
    stack.discord.seed_member(GUILD, alice)
    save = {"memory_content": "{user} plays chess", "memory_scope": "target_user", "target_user": "Rin"}
    llm.enqueue(
        completion_body(tool_calls=[("create_long_term_memory", save)]),
        completion_body("Noted."),
    )
    # When the model saves a memory about "Rin"
    turn(stack, alice, "remember that Rin plays chess")
    # Then the guild search (limit 100) decided for the username, and the result names the person
    (search,) = stack.discord.requests_to("GET", r".*/members/search.*")
    assert search.query["limit"] == ["100"]
    result = json.loads(llm.bodies[1]["messages"][-1]["content"])
    assert result["status"] == "memory_saved_successfully"
    assert result["about"] == "Rin Tohsaka (@rin)"
    assert named["id"] not in json.dumps(result)
    store = DynamoMemoryStore(table(stack))
    (memory,) = store.memories_of(ScopeKind.PERSONAL, named["id"])
    assert memory.content == "{user} plays chess"
    assert store.memories_of(ScopeKind.PERSONAL, nicknamed["id"]) == []
    embeds = [e for m in stack.discord.channel_messages(CHANNEL) for e in m.get("embeds") or []]
    assert "Rin Tohsaka plays chess" in embeds[0]["description"]
    assert named["id"] not in json.dumps(embeds)


def test_mentions_of_other_channels_read_as_their_names_and_a_private_ones_does_not(stack, llm):
    # Given a public channel and one @everyone may not view, both mentioned in the history
    discord = stack.discord
    bob = discord.seed_user("bob")
    hidden = [{"id": GUILD, "type": 0, "allow": "0", "deny": str(1 << 10)}]
    discord.seed_channel("300000000000000012", name="random", guild_id=GUILD)
    discord.seed_channel("300000000000000013", name="layoffs", guild_id=GUILD, permission_overwrites=hidden)
    discord.seed_message(CHANNEL, bob, "moved to <#300000000000000012>, not <#300000000000000013>")
    # When Bob addresses the bot twice, mentioning the public channel
    turn(stack, bob, "see <#300000000000000012>")
    turn(stack, bob, "and <#300000000000000012> again")
    # Then the model reads the public one's name and not the private one's
    texts = [text_of(t) for t in dialogue(llm.bodies[0])]
    assert texts[0].endswith("<som>moved to #random, not #unknown-channel<eom>")
    assert texts[-1].endswith("<som>@Kioku see #random<eom>")
    assert "layoffs" not in json.dumps(llm.bodies)
    # ...and the guild's channels were asked once: the list is kept for a while like the roles
    assert len(discord.requests_to("GET", rf".*/guilds/{GUILD}/channels")) == 1


def test_a_reply_that_echoes_headers_posts_only_the_bots_own_words(stack, llm):
    # Given a model that opens with its recalled-line header, writes ⏎ for line breaks and goes on
    # to write Bob's next turn
    bob = stack.discord.seed_user("bob")
    bot = stack.discord.bot_user["id"]
    echoed = f"<som>[Kioku (you) | UserID:{bot}] Sure ⏎ see you Friday<eom>\n[bob | UserID:{bob['id']}] <som>thanks"
    llm.enqueue(completion_body(echoed))
    # When Bob addresses the bot
    turn(stack, bob, "see you?")
    # Then only the bot's words are posted, with a real line break
    posted = [m["content"] for m in stack.discord.channel_messages(CHANNEL) if m["author"]["id"] == bot]
    assert posted == ["Sure\nsee you Friday"]


def test_the_target_ladder_resolves_a_name_with_a_title_or_an_honorific(stack, llm):
    # Given a member named sparrow whom nobody in the conversation is
    sparrow = stack.discord.seed_user("sparrow", global_name="Sparrow")
    stack.discord.seed_member(GUILD, sparrow)
    alice = stack.discord.seed_user("alice")
    stack.discord.seed_member(GUILD, alice)
    for target, fact in (("Master Sparrow", "sails"), ("sparrow-san", "keeps a parrot")):
        save = {"memory_content": f"{{user}} {fact}", "memory_scope": "target_user", "target_user": target}
        llm.enqueue(
            completion_body(tool_calls=[("create_long_term_memory", save)]), completion_body("Noted.")
        )
        # When the model saves a memory about the persona's name for Sparrow
        turn(stack, alice, f"remember that {target} {fact}")
        # Then it is Sparrow's
        result = json.loads(llm.bodies[-1]["messages"][-1]["content"])
        assert result["status"] == "memory_saved_successfully", target
        assert result["about"] == "Sparrow (@sparrow)"
    store = DynamoMemoryStore(table(stack))
    assert len(store.memories_of(ScopeKind.PERSONAL, sparrow["id"])) == 2
