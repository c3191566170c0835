"""``/persona add|list|view|edit|remove|nickname`` and ``/server addressing persona:`` through
InteractionsFunction, signed, on moto."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.discord.protocol import Permission
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.models import PersonaLimitReached, ServerConfig
from kioku.domain.personas import new_persona, with_persona
from kioku.domain.privacy import Origin
from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.entries import StmAddress
from kioku.domain.stm.update_tool import StmUpdate
from kioku.playground.events import component_click, modal_submit, slash_command
from tests.conftest import APPLICATION_ID

GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
OTHER_CHANNEL = "300000000000000002"
MEMBER = "400000000000000002"
MANAGER = str(int(Permission.MANAGE_GUILD))
NOTHING = "0"
WITH_WEBHOOKS = str(int(Permission.MANAGE_WEBHOOKS | Permission.SEND_MESSAGES))
WITHOUT_WEBHOOKS = str(int(Permission.SEND_MESSAGES))
NOW = datetime(2026, 12, 1, tzinfo=UTC)
STRING, USER_OPTION = 3, 6


@pytest.fixture
def configs(table) -> ConfigStore:
    return ConfigStore(table)


@pytest.fixture
def invoke(interact):
    return interact


def persona(subcommand: str, options: dict | None = None, *, permissions: str = MANAGER, **where) -> dict:
    return slash_command(
        APPLICATION_ID,
        "persona",
        subcommand,
        options,
        guild_id=GUILD,
        permissions=permissions,
        option_types={"member": USER_OPTION},
        **where,
    )


def embed(body: dict) -> dict:
    # a new message is ephemeral; an update rewrites the ephemeral message its button was on
    assert (body["type"], body["data"].get("flags")) in ((4, 64), (7, None))
    return body["data"]["embeds"][0]


def text(body: dict) -> str:
    shown = embed(body)
    fields = " | ".join(f"{f['name']}: {f['value']}" for f in shown.get("fields", []))
    return f"{shown.get('title', '')}\n{shown.get('description', '')}\n{fields}"


def add(invoke, name: str, interaction_id: str, **options) -> dict:
    return invoke(
        persona("add", {"name": name, "prompt": f"You are {name}.", **options}, interaction_id=interaction_id)
    )


def test_a_manager_adds_personas_up_to_the_limit_and_one_shares_another_s_memories(
    invoke, configs, monkeypatch
):
    monkeypatch.setenv("MAX_PERSONAS_PER_SERVER", "3")
    # When a manager adds Luna, then Sol sharing Luna's memories, then a fourth persona
    luna = add(invoke, "Luna", "600000000000000001", avatar_url="https://example.com/luna.png")
    sol = add(invoke, "Sol", "600000000000000002", memories_from="luna")
    fourth = add(invoke, "Stella", "600000000000000003")
    # Then Luna and Sol are saved, Sol in Luna's lineage; the fourth is refused, saying why
    assert (
        embed(luna)["title"] == "Added: Luna"
        and embed(luna)["thumbnail"]["url"] == "https://example.com/luna.png"
    )
    assert "shared with **Luna**" in text(sol)
    assert embed(fourth)["title"] == "Nothing was saved" and "already has 3 personas" in text(fourth)
    stored = configs.get_server_config(GUILD)
    assert [p.name for p in stored.personas] == ["Kioku", "Luna", "Sol"]
    assert (
        stored.persona_named("Sol").lineage_id
        == stored.persona_named("Luna").lineage_id
        == 600000000000000001
    )
    assert stored.persona_named("Luna").avatar_url == "https://example.com/luna.png"


def test_the_limit_is_a_condition_of_the_write_not_only_a_check_before_it(configs):
    # Given two managers who both read a server with one free place left
    config = ServerConfig(guild_id=GUILD)
    config = configs.save_server_config(
        with_persona(config, new_persona(config, persona_id="600000000000000001", name="Luna", prompt=""))
    )
    first = with_persona(config, new_persona(config, persona_id="600000000000000002", name="Sol", prompt=""))
    second = with_persona(
        config, new_persona(config, persona_id="600000000000000003", name="Stella", prompt="")
    )
    configs.save_with_persona_limit(first, 3)
    # When the second saves what it read (the version check aside: the stored list is full)
    with pytest.raises(PersonaLimitReached):
        configs.save_with_persona_limit(replace(second, version=config.version + 1), 3)
    assert [p.name for p in configs.get_server_config(GUILD).personas] == ["Kioku", "Luna", "Sol"]


@pytest.mark.parametrize(
    "options, why",
    [
        ({"name": "kioku"}, "already a persona called **kioku**"),
        ({"memories_from": "Nobody"}, "no persona called **Nobody**"),
        ({"avatar_url": "http://example.com/x.png"}, "https://"),
        ({"name": "So"}, "at least 3 characters long"),
        ({"name": "Hey"}, "not a common word"),
        ({"name": "月"}, "two for a name in Japanese, Chinese or Korean script"),
    ],
)
def test_a_persona_that_cannot_be_added_is_refused_with_why_and_nothing_is_saved(
    invoke, configs, options, why
):
    body = invoke(
        persona("add", {"name": "Luna", "prompt": "", **options}, interaction_id="600000000000000001")
    )
    assert embed(body)["title"] == "Nothing was saved" and why in text(body)
    assert configs.get_server_config(GUILD).alters == ()


def test_a_two_character_japanese_name_is_as_addressable_as_luna(invoke, configs):
    body = invoke(persona("add", {"name": "ルナ", "prompt": "x"}, interaction_id="600000000000000001"))

    assert embed(body)["title"] != "Nothing was saved", text(body)
    assert configs.get_server_config(GUILD).persona_named("ルナ") is not None


def test_members_cannot_add_remove_or_nickname(invoke, configs):
    refused = [
        invoke(persona("add", {"name": "Luna", "prompt": "x"}, permissions=NOTHING)),
        invoke(persona("remove", {"persona": "Kioku"}, permissions=NOTHING)),
        invoke(
            persona(
                "nickname", {"persona": "Kioku", "member": MEMBER, "nickname": "Cap"}, permissions=NOTHING
            )
        ),
    ]
    assert [embed(body)["title"] for body in refused] == ["Not allowed"] * 3
    assert configs.get_server_config(GUILD).version == 0


def test_list_shows_every_persona_and_tells_a_channel_without_manage_webhooks(invoke):
    add(invoke, "Luna", "600000000000000001")
    able = invoke(persona("list", permissions=NOTHING) | {"app_permissions": WITH_WEBHOOKS})
    unable = invoke(persona("list", permissions=NOTHING) | {"app_permissions": WITHOUT_WEBHOOKS})
    assert "**Kioku** (main persona)" in text(able) and "**Luna** (alter persona)" in text(able)
    assert "Manage Webhooks" not in text(able)
    assert "lack the **Manage Webhooks** permission" in text(unable)


def test_view_edit_and_stm_take_a_persona_and_default_to_the_main_one(invoke, configs, table):
    add(invoke, "Luna", "600000000000000001")
    # view
    assert "Luna" in embed(invoke(persona("view", {"persona": "luna"}, permissions=NOTHING)))["title"]
    assert embed(invoke(persona("view", permissions=NOTHING)))["fields"][0]["value"] == "Kioku"
    missing = invoke(persona("view", {"persona": "Nobody"}, permissions=NOTHING))
    assert embed(missing)["title"] == "Not understood" and "**Luna**" in text(missing)
    # edit: Luna's form saves Luna, and refuses another persona's name
    form = invoke(persona("edit", {"persona": "Luna"}))["data"]
    assert form["title"] == "The persona Luna"
    renamed = invoke(
        modal_submit(persona("edit"), form["custom_id"], {"name": "Luna Moon", "prompt": "Calm."})
    )
    assert embed(renamed)["title"] == "Saved: Luna Moon"
    stored = configs.get_server_config(GUILD)
    assert stored.persona.name == "Kioku" and stored.persona_named("Luna Moon").system_prompt == "Calm."
    form = invoke(persona("edit", {"persona": "Luna Moon"}))["data"]
    clash = invoke(modal_submit(persona("edit"), form["custom_id"], {"name": "KIOKU", "prompt": ""}))
    assert embed(clash)["title"] == "Nothing was saved"
    # stm view and edit: Luna's own row
    luna = configs.get_server_config(GUILD).persona_named("Luna Moon")
    stm = StmStore(table)
    address = StmAddress.of(GUILD, MEMBER, CHANNEL, luna.persona_id)
    stm.write_memory(
        StmRowIdentity(address, luna.lineage_id), StmUpdate(summary="moon talk"), [], NOW, timedelta(days=90)
    )
    assert "moon talk" in text(invoke(persona("stm view", {"persona": "Luna Moon"}, permissions=NOTHING)))
    assert "moon talk" not in text(invoke(persona("stm view", permissions=NOTHING)))
    form = invoke(persona("stm edit", {"persona": "Luna Moon"}))["data"]
    saved = invoke(modal_submit(persona("stm edit"), form["custom_id"], {"summary": "moon plans"}))
    assert "moon plans" in text(saved)
    assert stm.get(address).summary == "moon plans"
    assert stm.get(StmAddress.of(GUILD, MEMBER, CHANNEL, "kioku")) is None


def test_removing_a_persona_asks_first_naming_what_goes_then_removes_it(invoke, configs, table):
    # Given Luna, with two short-term rows and two server memories of her own lineage, and one of the main persona
    add(invoke, "Luna", "600000000000000001")
    luna = configs.get_server_config(GUILD).persona_named("Luna")
    stm, ltm = StmStore(table), DynamoMemoryStore(table)
    for channel in (CHANNEL, OTHER_CHANNEL):
        identity = StmRowIdentity(StmAddress.of(GUILD, MEMBER, channel, luna.persona_id), luna.lineage_id)
        stm.write_memory(identity, StmUpdate(summary="hi"), [], NOW, timedelta(days=90))
    here = Origin(GUILD, CHANNEL, private=False)
    for lineage, fact in [(luna.lineage_id, "likes the moon"), (luna.lineage_id, "hums"), (1, "main fact")]:
        ltm.create(MemoryDraft(MemoryScope.server(GUILD, lineage), fact, MEMBER, NOW, origin=here), limit=100)
    # When a manager asks to remove her
    asked = invoke(persona("remove", {"persona": "luna"}))
    # Then the confirmation names what goes, and nothing is removed yet
    assert embed(asked)["title"] == "Remove Luna?"
    assert "2 short-term memory rows in this server go with it" in text(asked)
    assert "2 server long-term memories of its lineage go with it" in text(asked)
    assert configs.get_server_config(GUILD).persona_named("Luna") is not None
    buttons = [c["custom_id"] for row in asked["data"]["components"] for c in row["components"]]
    # a member's click is refused
    refused = invoke(component_click(persona("remove", permissions=NOTHING), buttons[0]))
    assert embed(refused)["title"] == "Not allowed"
    # When the manager confirms
    done = invoke(component_click(persona("remove"), buttons[0]))
    # Then Luna, her rows and her lineage's memories are gone; the main persona's memory stays
    assert embed(done)["title"] == "Removed: Luna"
    assert configs.get_server_config(GUILD).persona_named("Luna") is None
    assert stm.persona_rows(GUILD, luna.persona_id) == []
    assert [m.content for m in ltm.memories_of(ScopeKind.SERVER, GUILD)] == ["main fact"]
    # and the main persona cannot be removed
    assert embed(invoke(persona("remove", {"persona": "Kioku"})))["title"] == "Nothing was changed"


def test_removing_a_persona_that_shares_a_lineage_keeps_the_memories(invoke, configs, table):
    add(invoke, "Luna", "600000000000000001")
    add(invoke, "Sol", "600000000000000002", memories_from="Luna")
    ltm = DynamoMemoryStore(table)
    scope = MemoryScope.server(GUILD, 600000000000000001)
    ltm.create(
        MemoryDraft(scope, "likes the moon", MEMBER, NOW, origin=Origin(GUILD, CHANNEL, private=False)),
        limit=100,
    )
    asked = invoke(persona("remove", {"persona": "Sol"}))
    assert "Its long-term memories stay: **Luna** shares them." in text(asked)
    buttons = [c["custom_id"] for row in asked["data"]["components"] for c in row["components"]]
    invoke(component_click(persona("remove"), buttons[0]))
    assert len(ltm.memories_of(ScopeKind.SERVER, GUILD)) == 1
    assert [p.name for p in configs.get_server_config(GUILD).personas] == ["Kioku", "Luna"]


def test_the_channel_webhooks_go_with_the_server_s_last_alter_persona(invoke, configs, table):
    from kioku.adapters.dynamodb.webhook_store import WebhookStore
    from kioku.domain.personas import ChannelWebhook

    # Given Luna and Sol, who spoke through the webhooks kioku keeps for two channels
    add(invoke, "Luna", "600000000000000001")
    add(invoke, "Sol", "600000000000000002")
    webhooks = WebhookStore(table)
    for channel in (CHANNEL, OTHER_CHANNEL):
        webhooks.keep(GUILD, channel, ChannelWebhook(f"7{channel[1:]}", "tok-en"))

    def remove(name: str) -> None:
        asked = invoke(persona("remove", {"persona": name}))
        buttons = [c["custom_id"] for row in asked["data"]["components"] for c in row["components"]]
        assert embed(invoke(component_click(persona("remove"), buttons[0])))["title"] == f"Removed: {name}"

    # When Sol is removed, the webhooks stay: Luna still speaks through them
    remove("Sol")
    assert all(webhooks.get(GUILD, channel) is not None for channel in (CHANNEL, OTHER_CHANNEL))
    # When Luna, the last alter persona, is removed, their items (and tokens) are deleted
    remove("Luna")
    assert all(webhooks.get(GUILD, channel) is None for channel in (CHANNEL, OTHER_CHANNEL))


def test_a_confirmation_counted_before_the_configuration_changed_removes_nothing(invoke, configs):
    add(invoke, "Luna", "600000000000000001")
    asked = invoke(persona("remove", {"persona": "Luna"}))
    add(invoke, "Sol", "600000000000000002", memories_from="Luna")  # the count is wrong now
    buttons = [c["custom_id"] for row in asked["data"]["components"] for c in row["components"]]
    stale = invoke(component_click(persona("remove"), buttons[0]))
    assert embed(stale)["title"] == "Nothing was saved"
    assert configs.get_server_config(GUILD).persona_named("Luna") is not None


def test_a_persona_s_nickname_for_a_member_is_its_own(invoke, configs):
    add(invoke, "Luna", "600000000000000001")
    body = invoke(persona("nickname", {"persona": "Luna", "member": MEMBER, "nickname": "Captain"}))
    assert embed(body)["title"] == "Saved: a nickname"
    stored = configs.get_server_config(GUILD)
    assert stored.persona_named("Luna").nickname_of(MEMBER) == "Captain"
    assert stored.persona.nickname_of(MEMBER) is None


def test_server_addressing_sets_one_persona_s_trigger_words_and_the_relay_reads_them(invoke, configs):
    add(invoke, "Luna", "600000000000000001")
    body = invoke(
        slash_command(
            APPLICATION_ID,
            "server",
            "addressing",
            {"persona": "Luna", "trigger_words": "moon, night sky"},
            guild_id=GUILD,
            permissions=MANAGER,
        )
    )
    assert "`moon`, `night sky`" in text(body) and "Luna" in embed(body)["title"]
    stored = configs.get_server_config(GUILD)
    assert stored.persona_named("Luna").trigger_words == ("moon", "night sky")
    assert stored.trigger_words == ()


def test_each_persona_lineage_holds_its_own_limit_of_server_memories(invoke, configs, table):
    # Given Luna (her own lineage) and Sol (sharing it), and a limit of two server memories
    from kioku.domain.ltm.memory import MemoryLimitReached

    add(invoke, "Luna", "600000000000000001")
    add(invoke, "Sol", "600000000000000002", memories_from="Luna")
    stored = configs.get_server_config(GUILD)
    ltm, here = DynamoMemoryStore(table), Origin(GUILD, CHANNEL, private=False)

    def save(persona_name: str, fact: str):
        scope = MemoryScope.server(GUILD, stored.persona_named(persona_name).lineage_id)
        return ltm.create(MemoryDraft(scope, fact, MEMBER, NOW, origin=here), limit=2)

    # When Luna saves two, then Sol one more, then the main persona two
    save("Luna", "one")
    save("Luna", "two")
    with pytest.raises(MemoryLimitReached):
        save("Sol", "three")  # Sol shares Luna's lineage, and so her count
    save("Kioku", "four")
    save("Kioku", "five")
    # Then the server holds two memories per lineage (seed 003: MAX_SERVER_MEMORIES per persona)
    lineages = sorted(m.scope.lineage for m in ltm.memories_of(ScopeKind.SERVER, GUILD))
    assert lineages == [1, 1, 600000000000000001, 600000000000000001]


def test_forget_all_and_export_reach_every_persona_s_lineage_and_rows(invoke, configs, table):
    from kioku.adapters.dynamodb.turn_ledger import TurnLedger
    from kioku.domain.privacy import Place
    from kioku.domain.stm.capture import TurnCapture
    from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmLimits
    from kioku.services import memory_control

    # Given Alice's personal memories in Luna's lineage and the main one's, and her lines in both rows
    add(invoke, "Luna", "600000000000000001")
    luna = configs.get_server_config(GUILD).persona_named("Luna")
    ltm, stm, here = DynamoMemoryStore(table), StmStore(table), Origin(GUILD, CHANNEL, private=False)
    for lineage, fact in [(luna.lineage_id, "told Luna a secret"), (1, "told Kioku a secret")]:
        ltm.create(
            MemoryDraft(MemoryScope.personal(MEMBER, lineage), fact, MEMBER, NOW, origin=here), limit=100
        )
    for persona_id, lineage in [(luna.persona_id, luna.lineage_id), ("kioku", 1)]:
        identity = StmRowIdentity(StmAddress.of(GUILD, MEMBER, CHANNEL, persona_id), lineage)
        line = CrudeMessage("alice", MEMBER, CrudeRole.USER, f"hello {persona_id}", NOW, message_id="1")
        stm.capture_turn(TurnCapture(identity, None, (line,), MEMBER, NOW, StmLimits()))
    ledger = TurnLedger(table)
    # When she exports, then forgets everything
    exported = memory_control.export(MEMBER, ltm, stm, NOW, place=Place(GUILD, CHANNEL), ledger=ledger)
    report = memory_control.forget_all(MEMBER, ltm, stm, ledger=ledger, now=NOW + timedelta(minutes=1))
    # Then the export held both lineages' memories and both rows' lines, and forget-all took them all
    assert sorted((m["persona_lineage"], m["text"]) for m in exported["long_term_memories"]) == [
        (1, "told Kioku a secret"),
        (luna.lineage_id, "told Luna a secret"),
    ]
    assert len(exported["your_lines_in_server_short_term_memory"]) == 2
    assert report.memories == 2 and report.lines == 2
    assert ltm.memories_of(ScopeKind.PERSONAL, MEMBER) == []
    assert all(
        not stm.get(StmAddress.of(GUILD, MEMBER, CHANNEL, p)).crude for p in (luna.persona_id, "kioku")
    )


def test_an_alter_persona_cannot_be_renamed_to_what_discord_refuses_as_a_webhook_name(invoke, configs):
    add(invoke, "Luna", "600000000000000001")
    form = invoke(persona("edit", {"persona": "Luna"}))["data"]
    refused = invoke(modal_submit(persona("edit"), form["custom_id"], {"name": "Discord Luna", "prompt": ""}))
    assert embed(refused)["title"] == "Nothing was saved" and "webhook names" in text(refused)
    assert configs.get_server_config(GUILD).persona_named("Luna") is not None


def test_an_alter_persona_cannot_be_renamed_to_a_word_ordinary_messages_open_with(invoke, configs):
    add(invoke, "Luna", "600000000000000001")
    form = invoke(persona("edit", {"persona": "Luna"}))["data"]
    refused = invoke(modal_submit(persona("edit"), form["custom_id"], {"name": "Well", "prompt": ""}))
    assert embed(refused)["title"] == "Nothing was saved" and "not a common word" in text(refused)
    assert configs.get_server_config(GUILD).persona_named("Luna") is not None


def test_persona_options_autocomplete_with_the_server_s_personas(invoke):
    from kioku.playground.events import autocomplete_typing

    # Given Luna and Lumen beside the main persona
    add(invoke, "Luna", "600000000000000001")
    add(invoke, "Lumen", "600000000000000002")

    # When a member types "lu" where a persona is asked for (remove, view, stm, memories_from)
    for command, option in [
        (persona("remove", {"persona": "x"}, permissions=NOTHING), "persona"),
        (persona("view", permissions=NOTHING), "persona"),
        (persona("add", {"name": "Nova", "prompt": "x"}), "memories_from"),
    ]:
        body = invoke(autocomplete_typing(command, option, "lu"))
        # Then Discord is offered those personas' names, and nothing is changed
        assert body["type"] == 8
        assert sorted(choice["value"] for choice in body["data"]["choices"]) == ["Lumen", "Luna"]
    # ...the names that start with what is typed come first, and another option gets none
    body = invoke(autocomplete_typing(persona("view", permissions=NOTHING), "persona", "o"))
    assert [c["value"] for c in body["data"]["choices"]] == ["Kioku"]
    body = invoke(autocomplete_typing(persona("add", {"prompt": "x"}), "name", "lu"))
    assert body["data"]["choices"] == []
    # ...and /server addressing persona: too
    addressing = slash_command(
        APPLICATION_ID, "server", "addressing", {}, guild_id=GUILD, permissions=MANAGER
    )
    body = invoke(autocomplete_typing(addressing, "persona", "LUN"))
    assert [c["value"] for c in body["data"]["choices"]] == ["Luna"]


def test_every_persona_and_memory_id_option_is_marked_for_autocomplete():
    from kioku.services.commands.registry import definitions

    def options(node: dict):
        for option in node.get("options") or []:
            yield option
            yield from options(option)

    marked = [
        (body["name"], option.get("autocomplete"))
        for body in definitions()
        for option in options(body)
        if option["name"] in ("persona", "memories_from", "memory_id")
    ]
    assert marked and all(flag is True for _, flag in marked), marked
