"""``/server memories list|forget|moderation|review`` and their buttons, through the real interactions
handler on moto: what managers see, what is written to DynamoDB, and what is refused."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.keys import ItemKey, book_key, counter_key, owner_pk
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore, entry_attribute
from kioku.discord.protocol import Permission
from kioku.domain.ltm.memory import (
    Memory,
    MemoryDraft,
    MemoryScope,
    MemoryStatus,
    ScopeKind,
    content_fingerprint,
)
from kioku.domain.models import MemoryModeration, Persona, ServerConfig
from kioku.domain.privacy import Origin, Place, PrivacyMode, PrivacyPolicy
from kioku.playground.events import component_click, slash_command
from kioku.services.commands import server, server_memories
from tests.conftest import APPLICATION_ID
from tests.integration.test_server_commands import GUILD, MANAGER, NOT_MANAGER, assert_ephemeral_error

OTHER_GUILD = "200000000000000009"
GENERAL, SECRET, THREAD_OF_SECRET = "300000000000000001", "300000000000000003", "300000000000000005"
ALICE, BOB = "400000000000000001", "400000000000000002"
ADMIN = str(Permission.ADMINISTRATOR | 1 << 11)
SAID_IN_GENERAL = Origin(GUILD, GENERAL, private=False)
SAID_IN_SECRET = Origin(GUILD, SECRET, private=True)
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
EPHEMERAL, UPDATE_MESSAGE, CHANNEL_MESSAGE = 64, 7, 4
PAGE = server_memories.PAGE_SIZE
_FIELD_NAME = re.compile(r"#(?P<id>[0-9]+) · ")


@pytest.fixture
def memories(table) -> DynamoMemoryStore:
    return DynamoMemoryStore(table)


@pytest.fixture
def configs(table) -> ConfigStore:
    return ConfigStore(table)


@pytest.fixture
def seed(memories):
    """Save a server memory straight into the store, each one a minute after the last."""
    minutes = itertools.count()

    def save(
        content: str,
        *,
        guild: str = GUILD,
        origin: Origin = SAID_IN_GENERAL,
        author: str = ALICE,
        status: MemoryStatus = MemoryStatus.ACTIVE,
        lineage: int = 1,
        expires_at: datetime | None = None,
    ) -> Memory:
        draft = MemoryDraft(
            scope=MemoryScope.server(guild, lineage),
            content=content,
            author_id=author,
            created_at=NOW + timedelta(minutes=next(minutes)),
            origin=origin,
            subject_id=author,
            status=status,
            expires_at=expires_at,
        )
        outcome = memories.create(draft, limit=100)
        return memories.find(ScopeKind.SERVER, guild, outcome.memory_id, expired_too=True)

    return save


def run(
    subcommand: str,
    *,
    permissions: str = MANAGER,
    guild_id: str | None = GUILD,
    channel: str = GENERAL,
    parent: str | None = None,
    **options,
) -> dict:
    """``/server memories <subcommand> option:value…`` as Discord sends it."""
    return slash_command(
        APPLICATION_ID,
        "server",
        f"memories {subcommand}",
        options,
        guild_id=guild_id,
        channel_id=channel,
        parent_channel_id=parent,
        permissions=permissions,
    )


def click(custom_id: str, **where) -> dict:
    """A click on the button ``custom_id``, by whom and where ``run`` takes."""
    return component_click(run("list", **where), custom_id)


def embed(body: dict) -> dict:
    return body["data"]["embeds"][0]


def listed(body: dict) -> list[str]:
    return [_FIELD_NAME.match(field["name"])["id"] for field in embed(body).get("fields", [])]


def field_of(body: dict, memory: Memory) -> dict:
    return next(field for field in embed(body)["fields"] if field["name"].startswith(f"#{memory.memory_id} "))


def buttons(body: dict) -> list[dict]:
    return [button for row in body["data"].get("components", []) for button in row["components"]]


def button(body: dict, label: str) -> dict:
    return next(button for button in buttons(body) if button["label"] == label)


def stored(memories: DynamoMemoryStore, guild: str = GUILD) -> dict[str, MemoryStatus]:
    return {memory.memory_id: memory.status for memory in memories.memories_of(ScopeKind.SERVER, guild)}


def count(table, guild: str = GUILD, lineage: int = 1) -> int:
    return int((table.get(counter_key(ScopeKind.SERVER, guild)) or {}).get(f"n_{lineage}", 0))


def embed_chars(body: dict) -> int:
    """What Discord counts toward the 6,000 characters of a message's embeds."""
    total = 0
    for shown in body["data"].get("embeds", []):
        total += len(shown.get("title", "")) + len(shown.get("description", ""))
        total += len(shown.get("footer", {}).get("text", ""))
        total += sum(len(field["name"]) + len(field["value"]) for field in shown.get("fields", []))
    return total


def assert_within_discord_limits(body: dict) -> None:
    data = body["data"]
    assert embed_chars(body) <= 6000
    assert len(data.get("content", "")) <= 2000
    for shown in data.get("embeds", []):
        assert len(shown.get("description", "")) <= 4096 and len(shown.get("fields", [])) <= 25
        assert all(
            len(field["name"]) <= 256 and len(field["value"]) <= 1024 for field in shown.get("fields", [])
        )
    rows = data.get("components", [])
    assert len(rows) <= 5 and sum(1 + len(row["components"]) for row in rows) <= 25
    custom_ids = [button["custom_id"] for button in buttons(body)]
    assert len(custom_ids) == len(set(custom_ids)) and all(len(custom_id) <= 100 for custom_id in custom_ids)


# -- the definition --------------------------------------------------------------------------------


def test_the_memories_group_has_exactly_the_contracts_subcommands_and_options():
    group = next(option for option in server.COMMAND.definition()["options"] if option["name"] == "memories")
    subcommands = {option["name"]: option for option in group["options"]}

    assert list(subcommands) == ["list", "forget", "moderation", "review", "add", "edit", "history"]
    edit_memory_id, content, edit_days, clear = subcommands["edit"]["options"]
    assert (edit_memory_id["name"], edit_memory_id["type"], edit_memory_id["required"]) == (
        "memory_id",
        4,
        True,
    )
    # the text or the expiry, or both, may change: only the id is required
    assert (content["name"], content["type"], content.get("required", False)) == ("content", 3, False)
    assert (edit_days["name"], edit_days["type"], edit_days["min_value"], edit_days["max_value"]) == (
        "expires_in_days",
        4,
        1,
        3650,
    )
    assert (clear["name"], clear["type"], clear.get("required", False)) == ("clear_expiry", 5, False)
    assert [option["name"] for option in subcommands["history"]["options"]] == ["memory_id"]
    assert "options" not in subcommands["review"]
    (order,) = subcommands["list"]["options"]
    assert (order["name"], order["type"], order.get("required", False)) == ("order", 3, False)
    assert [choice["value"] for choice in order["choices"]] == ["recent", "least_used"]
    content, persona, days = subcommands["add"]["options"]
    assert (content["name"], content["type"], content["required"]) == ("content", 3, True)
    assert (persona["name"], persona["type"], persona.get("required", False)) == ("persona", 3, False)
    assert (days["name"], days["type"], days["min_value"], days["max_value"]) == (
        "expires_in_days",
        4,
        1,
        3650,
    )
    (memory_id,) = subcommands["forget"]["options"]
    assert (memory_id["name"], memory_id["type"], memory_id["required"]) == ("memory_id", 4, True)
    (mode,) = subcommands["moderation"]["options"]
    assert (mode["name"], mode["type"], mode["required"]) == ("mode", 3, True)
    assert [choice["value"] for choice in mode["choices"]] == ["open", "approval"]


# -- /server memories list -------------------------------------------------------------------------


def test_the_list_shows_each_memory_with_its_id_status_author_channel_and_time(interact, seed, configs):
    # Given an active memory, a pending one, and one an earlier persona saved
    configs.save_server_config(ServerConfig(guild_id=GUILD, persona=Persona(lineage_id=2)))
    quiz = seed("quiz night is on fridays", lineage=2)
    pending = seed("{bot} loves puns", author=BOB, status=MemoryStatus.PENDING, lineage=2)
    earlier = seed("the old rules", lineage=1)

    # When a manager lists them
    body = interact(run("list"))

    # Then they are shown ephemerally, oldest first, with everything a manager curates by
    assert (body["type"], body["data"]["flags"]) == (CHANNEL_MESSAGE, EPHEMERAL)
    assert listed(body) == [quiz.memory_id, pending.memory_id, earlier.memory_id]
    assert field_of(body, quiz)["name"] == f"#{quiz.memory_id} · active"
    assert field_of(body, pending)["name"] == f"#{pending.memory_id} · pending review"
    assert field_of(body, earlier)["name"] == f"#{earlier.memory_id} · active · an earlier persona's"
    value = field_of(body, pending)["value"]
    assert value.startswith("Kioku loves puns\n")
    assert f"by <@{BOB}> in <#{GENERAL}> · saved <t:{int(pending.created_at.timestamp())}:R>" in value
    assert "3 kept for this server (1 awaiting review)" in embed(body)["description"]
    assert "components" not in body["data"]  # one page: no buttons


def test_a_live_alter_persona_s_memory_is_labelled_with_its_name_and_read_with_it(interact, seed, configs):
    # Given Luna, an alter persona with a lineage of her own, and a memory of hers
    luna = Persona(persona_id="600000000000000001", lineage_id=7, name="Luna", alter=True)
    configs.save_server_config(ServerConfig(guild_id=GUILD, alters=(luna,)))
    hers = seed("{bot} hums when it rains", lineage=7)

    body = interact(run("list"))

    assert field_of(body, hers)["name"] == f"#{hers.memory_id} · active · Luna's"
    assert field_of(body, hers)["value"].startswith("Luna hums when it rains\n")


def test_the_list_shows_until_when_a_memory_lasts_and_leaves_out_those_expired(interact, seed):
    lasting = seed("quiz night is on fridays")
    fair = seed("the book fair runs this month", expires_at=datetime(2036, 5, 17, 9, 0, tzinfo=UTC))
    gone = seed("a bake sale today", expires_at=NOW - timedelta(days=1))
    body = interact(run("list"))
    assert listed(body) == [lasting.memory_id, fair.memory_id] and gone.memory_id not in listed(body)
    assert field_of(body, fair)["name"] == f"#{fair.memory_id} · active · until 2036-05-17"
    assert "2 kept for this server" in embed(body)["description"]


def test_a_memory_whose_author_asked_to_be_forgotten_is_listed_without_them(interact, seed, memories):
    quiz = seed("quiz night is on fridays")
    memories.forget_author(quiz)
    value = field_of(interact(run("list")), quiz)["value"]
    assert f"by someone who asked to be forgotten in <#{GENERAL}>" in value and ALICE not in value


def test_the_list_of_a_server_without_memories_says_so_and_shows_no_other_servers(interact, seed):
    seed("another server's fact", guild=OTHER_GUILD)

    body = interact(run("list"))

    assert embed(body)["description"] == "No server memories yet."
    assert listed(body) == [] and buttons(body) == []


def test_pages_show_every_memory_exactly_once_with_the_right_buttons(interact, seed):
    # Given more memories than two pages hold
    saved = [seed(f"fact number {n}").memory_id for n in range(2 * PAGE + 2)]

    # When a manager opens the list and clicks Next to the end, then Previous once
    first = interact(run("list"))
    second = interact(click(button(first, "Next")["custom_id"]))
    last = interact(click(button(second, "Next")["custom_id"]))
    back = interact(click(button(last, "Previous")["custom_id"]))

    # Then each memory appears on exactly one page, in order, and each page is within Discord's limits
    assert listed(first) + listed(second) + listed(last) == saved
    assert [len(listed(page)) for page in (first, second, last)] == [PAGE, PAGE, 2]
    assert listed(back) == listed(second)
    # the first page can only go forward, the last only back; clicks rewrite the message in place
    assert (button(first, "Previous")["disabled"], button(first, "Next")["disabled"]) == (True, False)
    assert (button(second, "Previous")["disabled"], button(second, "Next")["disabled"]) == (False, False)
    assert (button(last, "Previous")["disabled"], button(last, "Next")["disabled"]) == (False, True)
    assert [page["type"] for page in (second, last, back)] == [UPDATE_MESSAGE] * 3
    assert embed(last)["footer"]["text"] == "Page 3 of 3"
    for page in (first, second, last):
        assert_within_discord_limits(page)


def test_a_page_past_the_end_shows_the_last_page(interact, seed):
    saved = [seed(f"fact number {n}").memory_id for n in range(PAGE + 1)]

    body = interact(click("server:memories:page:40"))

    assert listed(body) == saved[PAGE:]


def test_the_longest_memories_and_ids_stay_within_discords_limits(interact, table, monkeypatch):
    # Given full pages of the longest memories, with 20-digit ids, authors and channels
    monkeypatch.setenv("MAX_MEMORY_LENGTH", "4000")
    ids = (str(10**19 + n) for n in itertools.count())
    store = DynamoMemoryStore(table, new_id=lambda: next(ids))
    longest = "9" * 20
    for n in range(PAGE + 1):
        for status in MemoryStatus:
            draft = MemoryDraft(
                scope=MemoryScope.server(GUILD, 1),
                content=f"{n}{status} " + "\N{GRINNING FACE}" * 3990,
                author_id=longest,
                created_at=NOW,
                origin=Origin(GUILD, longest, private=False),
                status=status,
            )
            store.create(draft, limit=100)

    # When the list and the review are opened, and a memory approved
    listing = interact(run("list"))
    review = interact(run("review"))
    approved = interact(click(buttons(review)[0]["custom_id"]))

    # Then every message fits Discord's limits
    for body in (listing, review, approved):
        assert_within_discord_limits(body)
    assert len(buttons(review)) == 2 * PAGE


# -- private channels --------------------------------------------------------------------------------


def test_a_memory_said_in_a_private_channel_is_read_only_there_and_in_its_threads(interact, seed):
    # Given a memory said in the private #secret
    vault = seed("the vault code is okapi", origin=SAID_IN_SECRET)

    # When a manager lists the memories in #general, in #secret, and in a thread of #secret
    elsewhere = field_of(interact(run("list", channel=GENERAL)), vault)["value"]
    there = field_of(interact(run("list", channel=SECRET)), vault)["value"]
    in_thread = field_of(interact(run("list", channel=THREAD_OF_SECRET, parent=SECRET)), vault)["value"]

    # Then #general shows who said it where, but not what
    assert "okapi" not in elsewhere
    assert "Said in a private channel: open the list there to read it." in elsewhere
    assert f"by <@{ALICE}> in <#{SECRET}>" in elsewhere
    assert "okapi" in there and "okapi" in in_thread


def test_a_page_turned_elsewhere_still_hides_a_private_memory(interact, seed):
    for n in range(PAGE):
        seed(f"fact number {n}")
    vault = seed("the vault code is okapi", origin=SAID_IN_SECRET)

    second = interact(click("server:memories:page:1", channel=GENERAL))

    assert listed(second) == [vault.memory_id]
    assert "okapi" not in field_of(second, vault)["value"]


def test_overrides_decide_privacy_and_the_bypass_reveals_nothing(interact, seed, configs):
    # Given a memory said in public in #general, and one in the private #secret
    quiz = seed("quiz night is on fridays")
    vault = seed("the vault code is okapi", origin=SAID_IN_SECRET)
    # When #general is overridden private, #secret public... then only the bypass is on
    configs.save_server_config(
        ServerConfig(
            guild_id=GUILD, channel_privacy={GENERAL: PrivacyMode.PRIVATE, SECRET: PrivacyMode.PUBLIC}
        )
    )
    overridden = interact(run("list", channel=THREAD_OF_SECRET, parent=SECRET))
    configs.save_server_config(
        replace(configs.get_server_config(GUILD), channel_privacy={}, stm_privacy_bypass=True)
    )
    bypassed = interact(run("list", channel=GENERAL, parent=None))

    # Then the overrides swap what is readable in a thread of #secret; the bypass changes nothing
    assert "Said in a private channel" in field_of(overridden, quiz)["value"]
    assert "okapi" in field_of(overridden, vault)["value"]
    assert "okapi" not in field_of(bypassed, vault)["value"]


def test_a_memory_stored_before_origins_is_read_only_by_an_administrator(interact, seed):
    legacy = seed("the old motto", origin=Origin.unknown())

    manager = field_of(interact(run("list", permissions=MANAGER)), legacy)["value"]
    admin = field_of(interact(run("list", permissions=ADMIN)), legacy)["value"]

    assert "the old motto" not in manager and "only an Administrator can read it" in manager
    assert f"by <@{ALICE}> in an unknown channel" in manager
    assert admin.startswith("the old motto\n")


# -- /server memories forget -------------------------------------------------------------------------


def test_forget_deletes_the_memory_and_names_it(interact, table, seed, memories):
    # Given two memories, one of them pending
    quiz = seed("quiz night is on fridays")
    puns = seed("loves puns", status=MemoryStatus.PENDING)

    # When a manager forgets each by id
    body = interact(run("forget", memory_id=int(quiz.memory_id)))
    interact(run("forget", memory_id=int(puns.memory_id)))

    # Then the reply names what was forgotten, and the memories, their slots and book entries are gone
    assert body["data"]["flags"] == EPHEMERAL
    assert embed(body)["title"] == f"Forgot server memory #{quiz.memory_id}"
    assert field_of(body, quiz)["value"].startswith("quiz night is on fridays")
    assert stored(memories) == {} and count(table) == 0
    assert entry_attribute(quiz.memory_id) not in (table.get(book_key(quiz.scope)) or {})


def test_forgetting_a_private_memory_elsewhere_names_it_without_its_text(interact, seed, memories):
    vault = seed("the vault code is okapi", origin=SAID_IN_SECRET)

    body = interact(run("forget", memory_id=int(vault.memory_id), channel=GENERAL))

    assert "okapi" not in str(body) and f"#{vault.memory_id}" in embed(body)["title"]
    assert stored(memories) == {}


@pytest.mark.parametrize(
    ("memory_id", "complaint"),
    [
        ("abc", "`memory_id` must be"),
        (0, "`memory_id` must be"),
        (-5, "`memory_id` must be"),
        (10**25, "`memory_id` must be"),
        (True, "`memory_id` must be"),
        (1.5, "`memory_id` must be"),
        (99, "there is no server memory #99 here"),
    ],
    ids=["text", "zero", "negative", "huge", "boolean", "fraction", "unknown"],
)
def test_forgetting_an_id_that_is_no_memory_here_changes_nothing(
    interact, table, seed, memories, memory_id, complaint
):
    seed("quiz night is on fridays")
    before = stored(memories)

    body = interact(run("forget", memory_id=memory_id))

    assert_ephemeral_error(body, "Nothing was changed", complaint)
    assert stored(memories) == before and count(table) == 1


def test_another_servers_memory_cannot_be_forgotten_from_here(interact, table, seed, memories):
    theirs = seed("their secret plan", guild=OTHER_GUILD)

    body = interact(run("forget", memory_id=int(theirs.memory_id)))

    assert_ephemeral_error(body, f"there is no server memory #{theirs.memory_id} here")
    assert stored(memories, OTHER_GUILD) == {theirs.memory_id: MemoryStatus.ACTIVE}
    assert count(table, OTHER_GUILD) == 1


# -- /server memories moderation ---------------------------------------------------------------------


def test_moderation_is_saved_like_every_other_setting(interact, configs):
    # Given the default, open
    assert configs.get_server_config(GUILD).memory_moderation is MemoryModeration.OPEN

    # When a manager asks for approval, then opens it again
    approval = interact(run("moderation", mode="approval"))
    assert configs.get_server_config(GUILD).memory_moderation is MemoryModeration.APPROVAL
    interact(run("moderation", mode="open"))

    # Then each change is saved as a new version, and the reply says what it means
    saved = configs.get_server_config(GUILD)
    assert (saved.memory_moderation, saved.version) == (MemoryModeration.OPEN, 2)
    assert embed(approval)["title"] == "Saved: memory moderation is approval"
    assert "/server memories review" in embed(approval)["description"]


def test_an_unknown_moderation_mode_saves_nothing(interact, configs):
    body = interact(run("moderation", mode="closed"))

    assert_ephemeral_error(body, "Nothing was saved", "mode must be open or approval")
    assert configs.get_server_config(GUILD) == ServerConfig(guild_id=GUILD)


# -- /server memories review -------------------------------------------------------------------------


def test_review_lists_pending_memories_oldest_first_with_approve_and_reject(interact, seed):
    # Given two pending memories and an active one
    first = seed("quiz night is on fridays", author=BOB, status=MemoryStatus.PENDING)
    seed("already approved")
    second = seed("loves puns", author=BOB, status=MemoryStatus.PENDING)

    # When a manager opens the review
    body = interact(run("review"))

    # Then the pending ones are shown oldest first, each with its own Approve and Reject
    assert body["data"]["flags"] == EPHEMERAL
    assert listed(body) == [first.memory_id, second.memory_id]
    assert field_of(body, first)["value"].startswith("quiz night is on fridays")
    rows = [[(b["label"], b["style"]) for b in row["components"]] for row in body["data"]["components"]]
    assert rows == [
        [(f"Approve #{first.memory_id}", 3), (f"Reject #{first.memory_id}", 4)],
        [(f"Approve #{second.memory_id}", 3), (f"Reject #{second.memory_id}", 4)],
    ]


def test_approving_makes_a_memory_recalled_and_rejecting_deletes_it(interact, table, seed, memories):
    # Given two pending memories, in a server in approval mode
    ConfigStore(table).save_server_config(
        ServerConfig(guild_id=GUILD, memory_moderation=MemoryModeration.APPROVAL)
    )
    quiz = seed("quiz night is on fridays", author=BOB, status=MemoryStatus.PENDING)
    puns = seed("loves puns", author=BOB, status=MemoryStatus.PENDING)
    review = interact(run("review"))

    # When a manager approves the first and rejects the second
    approved = interact(click(button(review, f"Approve #{quiz.memory_id}")["custom_id"]))
    rejected = interact(click(button(approved, f"Reject #{puns.memory_id}")["custom_id"]))

    # Then the first is active and recalled, the second gone with its slot
    assert stored(memories) == {quiz.memory_id: MemoryStatus.ACTIVE}
    assert count(table) == 1
    recalled = memories.recall(GUILD, 1, [], place=Place(GUILD, GENERAL), policy=PrivacyPolicy(GUILD))
    assert [memory.memory_id for memory in recalled.server] == [quiz.memory_id]
    # and each click rewrote the review in place: what is left, or nothing
    assert approved["type"] == UPDATE_MESSAGE
    assert (
        approved["data"]["content"]
        == f"Approved server memory #{quiz.memory_id}: kioku may recall it from now on."
    )
    assert listed(approved) == [puns.memory_id]
    assert rejected["data"]["content"] == f"Rejected server memory #{puns.memory_id}: it is deleted."
    assert embed(rejected)["description"] == "Nothing awaits review."
    assert rejected["data"]["components"] == []


def test_review_shows_the_oldest_five_and_says_how_many_wait(interact, seed):
    waiting = [seed(f"fact number {n}", status=MemoryStatus.PENDING).memory_id for n in range(PAGE + 2)]

    body = interact(run("review"))

    assert listed(body) == waiting[:PAGE]
    assert embed(body)["footer"]["text"] == f"Showing the oldest {PAGE} of {PAGE + 2}"
    assert len(body["data"]["components"]) == PAGE


def test_review_with_nothing_pending_says_whether_moderation_is_on(interact, configs):
    open_server = interact(run("review"))
    configs.save_server_config(ServerConfig(guild_id=GUILD, memory_moderation=MemoryModeration.APPROVAL))
    approval_server = interact(run("review"))

    assert "Memory moderation is open" in embed(open_server)["description"]
    assert embed(approval_server)["description"] == "Nothing awaits review."
    assert buttons(open_server) == buttons(approval_server) == []


def test_a_pending_memory_said_in_private_is_reviewed_without_its_text_elsewhere(interact, seed):
    vault = seed("the vault code is okapi", origin=SAID_IN_SECRET, status=MemoryStatus.PENDING)

    elsewhere = interact(run("review", channel=GENERAL))
    there = interact(run("review", channel=SECRET))

    assert "okapi" not in str(elsewhere)
    assert "open the review there to read it" in field_of(elsewhere, vault)["value"]
    assert "okapi" in field_of(there, vault)["value"]


# -- stale and repeated buttons ----------------------------------------------------------------------


def review_buttons(interact, memory: Memory) -> tuple[str, str]:
    body = interact(run("review"))
    return (
        button(body, f"Approve #{memory.memory_id}")["custom_id"],
        button(body, f"Reject #{memory.memory_id}")["custom_id"],
    )


def test_approving_twice_changes_nothing_the_second_time(interact, table, seed, memories):
    puns = seed("loves puns", status=MemoryStatus.PENDING)
    approve, reject = review_buttons(interact, puns)
    interact(click(approve))

    again = interact(click(approve))
    late_reject = interact(click(reject))

    assert_ephemeral_error(again, "Nothing was changed", "already approved")
    assert_ephemeral_error(late_reject, "already approved")
    assert stored(memories) == {puns.memory_id: MemoryStatus.ACTIVE} and count(table) == 1


def test_approving_a_rejected_or_forgotten_memory_changes_nothing(interact, table, seed, memories):
    # Given two pending memories, one rejected and one forgotten after the review was shown
    puns = seed("loves puns", status=MemoryStatus.PENDING)
    quiz = seed("quiz night", status=MemoryStatus.PENDING)
    puns_approve, puns_reject = review_buttons(interact, puns)
    quiz_approve, _ = review_buttons(interact, quiz)
    interact(click(puns_reject))
    interact(run("forget", memory_id=int(quiz.memory_id)))

    # When their Approve (and Reject again) buttons are clicked
    answers = [interact(click(custom_id)) for custom_id in (puns_approve, puns_reject, quiz_approve)]

    # Then each says so, and nothing comes back
    for body in answers:
        assert_ephemeral_error(body, "Nothing was changed", "already rejected or forgotten")
    assert stored(memories) == {} and count(table) == 0


def test_a_memory_changed_since_the_review_was_shown_is_not_approved(interact, seed, memories):
    puns = seed("loves puns", status=MemoryStatus.PENDING)
    approve, _ = review_buttons(interact, puns)
    memories.replace_content(puns, "loves bad puns", NOW)

    body = interact(click(approve))

    assert_ephemeral_error(body, "changed since this list was shown")
    assert stored(memories) == {puns.memory_id: MemoryStatus.PENDING}


def test_a_review_button_carries_nothing_computed_from_the_text(interact, seed):
    # Given a pending memory said in a private channel, reviewed from a public one
    vault = seed("the vault code is 5821", origin=SAID_IN_SECRET, status=MemoryStatus.PENDING)
    twin = seed(
        "the vault code is 5821", origin=Origin(GUILD, "300000000000000077"), status=MemoryStatus.PENDING
    )

    # When the review's buttons are read
    approve, reject = review_buttons(interact, vault)
    tag = approve.rsplit(":", 1)[1]

    # Then the tag is neither a hash of the text nor found by guessing it offline
    guesses = {content_fingerprint(f"the vault code is {code:04d}")[:12] for code in range(10_000)}
    assert tag not in guesses and reject.endswith(tag)
    assert review_buttons(interact, twin)[0].rsplit(":", 1)[1] != tag
    assert review_buttons(interact, vault)[0] == approve  # the same buttons while it is unchanged


def test_a_button_of_a_review_posted_before_the_tags_is_refused_as_out_of_date(interact, seed, memories):
    # Given a pending memory, and an Approve button of a message posted before buttons had tags
    puns = seed("loves puns", status=MemoryStatus.PENDING)
    posted_before = f"server:memories:approve:{puns.memory_id}:{puns.fingerprint[:12]}"

    # When it is clicked
    body = interact(click(posted_before))

    # Then it changes nothing and says why, in a message only the manager sees
    assert_ephemeral_error(body, "Nothing was changed", "changed since this list was shown")
    assert stored(memories) == {puns.memory_id: MemoryStatus.PENDING}


@pytest.mark.parametrize(
    "custom_id",
    [
        "server:memories:approve:abc:0123456789ab",
        "server:memories:approve:12345",
        "server:memories:approve:12345:0123456789AB",
        "server:memories:approve:123456789012345678901:0123456789ab",
        "server:memories:page:-1",
        "server:memories:page:1234567",
        "server:memories:frobnicate:12345",
        "server:memories",
        "server:" + "9" * 300,
    ],
    ids=[
        "id text",
        "no tag",
        "upper tag",
        "21 digits",
        "negative page",
        "huge page",
        "unknown verb",
        "bare",
        "long",
    ],
)
def test_malformed_buttons_are_refused_and_change_nothing(interact, seed, memories, custom_id):
    seed("loves puns", status=MemoryStatus.PENDING)
    before = stored(memories)

    body = interact(click(custom_id))

    assert_ephemeral_error(body, "Nothing was changed", "this button is not one I know")
    assert stored(memories) == before


def test_a_button_naming_another_servers_memory_changes_nothing(interact, seed, memories):
    theirs = seed("their plan", guild=OTHER_GUILD, status=MemoryStatus.PENDING)
    forged = f"server:memories:approve:{theirs.memory_id}:{theirs.fingerprint[:12]}"

    body = interact(click(forged))

    assert_ephemeral_error(body, "Nothing was changed")
    assert stored(memories, OTHER_GUILD) == {theirs.memory_id: MemoryStatus.PENDING}


# -- who may ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "refusal"),
    [
        ({"permissions": NOT_MANAGER}, "Manage Server"),
        ({"guild_id": None}, "not in direct messages"),
    ],
    ids=["not a manager", "in a DM"],
)
def test_only_managers_in_the_server_may_curate(interact, table, seed, memories, configs, who, refusal):
    # Given a pending memory and its review buttons
    puns = seed("loves puns", status=MemoryStatus.PENDING)
    approve, reject = review_buttons(interact, puns)
    config_before = configs.get_server_config(GUILD)

    # When someone else runs every command and clicks every button
    answers = [
        interact(run("list", **who)),
        interact(run("review", **who)),
        interact(run("forget", memory_id=int(puns.memory_id), **who)),
        interact(run("moderation", mode="approval", **who)),
        interact(click(approve, **who)),
        interact(click(reject, **who)),
        interact(click("server:memories:page:0", **who)),
    ]

    # Then each is refused, shows nothing, and nothing changes
    for body in answers:
        assert_ephemeral_error(body, refusal)
        assert "loves puns" not in str(body)
    assert stored(memories) == {puns.memory_id: MemoryStatus.PENDING} and count(table) == 1
    assert configs.get_server_config(GUILD) == config_before


def test_memory_id_autocompletes_for_managers_without_a_private_channel_s_words(interact, seed):
    from kioku.playground.events import autocomplete_typing

    # Given a memory said in #general and one said in the private #secret
    quiz = seed("quiz night is on fridays")
    vault = seed("the vault code is okapi", origin=SAID_IN_SECRET)
    seed("a bake sale today", expires_at=NOW - timedelta(days=1))  # expired: offered nowhere

    # When a manager in #general types in forget's memory_id
    offered = interact(autocomplete_typing(run("forget", memory_id=1), "memory_id", ""))["data"]["choices"]
    # Then both are offered by number, #secret's without its text
    assert sorted(c["value"] for c in offered) == sorted([int(quiz.memory_id), int(vault.memory_id)])
    assert "quiz night" in str(offered) and "okapi" not in str(offered)
    # ...typing words of a text finds it; typing in #secret shows its text there
    (found,) = interact(autocomplete_typing(run("forget", memory_id=1), "memory_id", "quiz"))["data"][
        "choices"
    ]
    assert found["value"] == int(quiz.memory_id)
    there = interact(autocomplete_typing(run("forget", channel=SECRET, memory_id=1), "memory_id", ""))
    assert "okapi" in str(there)
    # ...and a member who does not manage the server is offered nothing
    member = run("forget", permissions="0", memory_id=1)
    assert interact(autocomplete_typing(member, "memory_id", ""))["data"]["choices"] == []


def test_an_expired_server_memory_is_reviewed_edited_read_and_forgotten_nowhere(
    interact, table, seed, memories
):
    # Given a review shown while two pending memories still held, which then expired
    puns = seed("loves puns", status=MemoryStatus.PENDING, expires_at=datetime(2036, 5, 17, tzinfo=UTC))
    quiz = seed("quiz night", status=MemoryStatus.PENDING, expires_at=datetime(2036, 5, 17, tzinfo=UTC))
    puns_approve, _ = review_buttons(interact, puns)
    _, quiz_reject = review_buttons(interact, quiz)
    for memory in (puns, quiz):
        table.update(
            ItemKey(owner_pk(ScopeKind.SERVER, GUILD), f"M#{memory.memory_id}"),
            "SET memory_expires_at = :past",
            values={":past": int((table.clock() - timedelta(days=1)).timestamp())},
        )
    sale = seed("a bake sale today", expires_at=NOW - timedelta(days=1))

    # When a manager clicks them, opens the review and the list, and edits, reads and forgets one
    clicked = [interact(click(custom_id)) for custom_id in (puns_approve, quiz_reject)]
    review, listing = interact(run("review")), interact(run("list"))
    edited = interact(run("edit", memory_id=int(sale.memory_id), content="a bake sale tomorrow"))
    history = interact(run("history", memory_id=int(sale.memory_id)))
    forgotten = interact(run("forget", memory_id=int(sale.memory_id)))

    # Then each is refused as not found, shows nothing of them, and changes nothing
    for body in clicked:
        assert_ephemeral_error(body, "Nothing was changed", "already rejected or forgotten")
    assert listed(review) == [] and listed(listing) == []
    for body in (edited, history, forgotten):
        assert_ephemeral_error(
            body, "Nothing was changed", f"there is no server memory #{sale.memory_id} here"
        )
        assert "bake sale" not in str(body)
    assert stored(memories) == {}
    kept = memories.memories_of(ScopeKind.SERVER, GUILD, expired_too=True)
    assert [(m.content, m.status, m.changes) for m in kept] == [
        ("loves puns", MemoryStatus.PENDING, 0),
        ("quiz night", MemoryStatus.PENDING, 0),
        ("a bake sale today", MemoryStatus.ACTIVE, 0),
    ]


def shown_at(table, memory: Memory, at: datetime) -> None:
    """``memory`` was last shown at ``at``, as the janitor's fold of the turns' records sets it."""
    table.update(
        ItemKey(owner_pk(ScopeKind.SERVER, GUILD), f"M#{memory.memory_id}"),
        "SET last_shown = :at",
        values={":at": at.astimezone(UTC).isoformat(timespec="seconds")},
    )


def test_the_list_orders_by_least_used_or_newest_and_marks_memories_unused_for_90_days(interact, seed, table):
    # Given memories saved long ago: shown yesterday, 100 days ago, 10 days ago, or never
    today = datetime.now(UTC).replace(microsecond=0)
    yesterday, long_ago, lately, never, never_too, newest = (seed(f"fact {n}") for n in range(6))
    for memory, days in ((yesterday, 1), (long_ago, 100), (lately, 10), (newest, 2)):
        shown_at(table, memory, today - timedelta(days=days))

    # When a manager lists them least used first, turns the page, and lists them newest first
    least = interact(run("list", order="least_used"))
    second = interact(click(button(least, "Next")["custom_id"]))
    recent = interact(run("list", order="recent"))

    # Then never shown come first (the oldest first), then the longest since shown; the page button
    # keeps the order; those unused for 90 days (or never shown, and older) are marked
    by_id = [never, never_too, long_ago, lately, newest, yesterday]
    assert listed(least) + listed(second) == [m.memory_id for m in by_id]
    assert button(least, "Next")["custom_id"] == "server:memories:page:least_used:1"
    marked = {m.memory_id for m in (never, never_too, long_ago)}
    for memory in by_id[:PAGE]:
        assert field_of(least, memory)["name"].endswith(" · unused 90+ days") == (memory.memory_id in marked)
    assert "least used first" in embed(least)["description"]
    assert (
        listed(recent)
        == [m.memory_id for m in reversed((yesterday, long_ago, lately, never, never_too, newest))][:PAGE]
    )
    assert "unused" not in str(embed(recent)["fields"]) and "unused" not in str(embed(interact(run("list"))))


def test_an_order_that_is_not_offered_is_refused(interact, seed):
    seed("quiz night is on fridays")
    body = interact(run("list", order="sideways"))
    assert_ephemeral_error(body, "`order` is `recent` or `least_used`.")
