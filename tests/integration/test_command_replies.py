"""Every refusal reads as a refusal, titled with why; a failure reads as "Something went wrong"."""

from __future__ import annotations

import logging

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.domain.ltm.memory import MemoryStoreFailed
from kioku.domain.models import ServerConfig
from kioku.entrypoints.composition import Container
from kioku.playground.events import component_click, modal_submit, slash_command
from kioku.services.commands.router import route_interaction
from tests.conftest import APPLICATION_ID

GUILD = "200000000000000001"
ALICE, BOB = "400000000000000001", "400000000000000002"
MANAGER, MEMBER = str(1 << 5), str(1 << 11)
FAILURE = "Something went wrong"


def command(
    name: str, path: str, *, by: str = ALICE, permissions: str = MEMBER, guild: str | None = GUILD, **options
):
    return slash_command(
        APPLICATION_ID, name, path, options, guild_id=guild, user_id=by, permissions=permissions
    )


def title(body: dict) -> str:
    assert body["type"] == 4 and body["data"]["flags"] == 64, body
    (embed,) = body["data"]["embeds"]
    return embed["title"]


def description(body: dict) -> str:
    return body["data"]["embeds"][0]["description"]


def stored_items(table) -> list[dict]:
    return table.client.scan(TableName=table.name)["Items"]


REFUSALS = {
    "a member without Manage Server on /server": (
        command("server", "stm parameters", refresh_cadence=9),
        "Not allowed",
        "Manage Server",
    ),
    "a member without Manage Server on /capabilities": (
        command("capabilities", "manage", self_teaching=False),
        "Not allowed",
        "Manage Server",
    ),
    "a member without Manage Server editing a channel's memory": (
        command("persona", "stm edit"),
        "Not allowed",
        "Manage Server",
    ),
    "/server in a DM": (
        command("server", "memories list", guild=None, permissions=MANAGER),
        "Only in a server",
        "not in direct messages",
    ),
    "a setting out of range": (
        command("server", "stm parameters", permissions=MANAGER, refresh_cadence=0),
        "Nothing was saved",
        "`refresh_cadence`",
    ),
    "an unknown subcommand": (command("server", "stm wipe", permissions=MANAGER), "Not understood", "Try"),
    "an empty /chat": (command("chat", "", message=" "), "Not understood", "Tell me something"),
    "forgetting a personal memory that is not there": (
        command("personal", "memories forget", memory_id=12345),
        "Nothing was changed",
        "I keep no memory #12345 about you",
    ),
    "a personal memory id that is no number": (
        command("personal", "memories forget", memory_id="twelve"),
        "Not understood",
        "`memory_id`",
    ),
    "a personal privacy level that does not exist": (
        command("personal", "stm", privacy="secret"),
        "Nothing was changed",
        "`privacy` must be one of",
    ),
    "a click on someone else's list": (
        component_click(command("personal", "memories list"), f"personal:list:{BOB}:0"),
        "Not allowed",
        "someone else's",
    ),
    "a click on someone else's forget-all": (
        component_click(command("personal", "memories list"), f"personal:forget-all:confirm:{BOB}"),
        "Not allowed",
        "someone else's",
    ),
    "a button kioku never wrote": (
        component_click(command("personal", "memories list"), "personal:detonate:1"),
        "Nothing was changed",
        "not one I know",
    ),
}


@pytest.mark.parametrize(("payload", "expected", "phrase"), REFUSALS.values(), ids=REFUSALS.keys())
def test_each_refusal_is_titled_with_why_and_changes_nothing(interact, table, payload, expected, phrase):
    # Given nothing stored
    # When a request kioku turns down is sent
    body = interact(payload)
    # Then it is answered with its own title and what to do, and nothing is stored
    assert title(body) == expected and phrase in description(body)
    assert stored_items(table) == []


def test_a_queue_that_cannot_be_reached_is_a_failure(interact, monkeypatch, resources):
    # Given a queue that is gone
    monkeypatch.setenv("TURN_QUEUE_URL", resources.turn_queue_url + "-gone")
    # When /chat and /personal memories export need it
    answers = [
        interact(command("chat", "", message="hello")),
        interact(command("personal", "memories export")),
    ]
    # Then both are failures, not refusals
    assert [title(body) for body in answers] == [FAILURE, FAILURE]
    assert all("try again" in description(body).lower() for body in answers)


class UnreachableMemories(DynamoMemoryStore):
    def memories_of(self, kind, owner_id, **options):
        raise MemoryStoreFailed("the table is throttled")


class BrokenConfigStore(ConfigStore):
    def get_server_config(self, guild_id):
        raise RuntimeError("a bug")


def test_memories_out_of_reach_are_a_failure_for_both_scopes(settings, table):
    context = Container(settings, ltm_store=UnreachableMemories(table))

    answers = [
        route_interaction(command("personal", "memories list"), context),
        route_interaction(command("server", "memories list", permissions=MANAGER), context),
    ]

    assert [title(body) for body in answers] == [FAILURE, FAILURE]
    assert all("could not reach the memories" in description(body) for body in answers)


def test_an_unexpected_error_is_a_failure_and_is_logged_with_its_command(settings, table, caplog):
    context = Container(settings, config_store=BrokenConfigStore(table))

    with caplog.at_level(logging.ERROR):
        body = route_interaction(command("server", "stm parameters", permissions=MANAGER), context)

    assert title(body) == FAILURE and "problem on my side" in description(body)
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "'server'" in record.getMessage() and record.exc_info[0] is RuntimeError


FORGED = {
    "a button past Discord's 100 characters": ("button", "server:memories:page:" + "9" * 5000),
    "a button of a kind kioku never wrote": ("button", "personal:list:1:2:3"),
    "a review button with a forged fingerprint": ("button", "server:memories:approve:12345:ZZZZZZZZZZZZ"),
    "a button of no command": ("button", "gone:1"),
    "a form past Discord's 100 characters": ("form", "server:prompt-edit:" + "1" * 200),
    "a form of a kind kioku never wrote": ("form", "persona:edit:abc"),
    "a form of no command": ("form", "wipe:everything"),
}


@pytest.mark.parametrize(("kind", "custom_id"), FORGED.values(), ids=FORGED.keys())
def test_a_forged_id_is_refused_and_changes_nothing(interact, table, kind, custom_id):
    # Given a server with its settings saved
    ConfigStore(table).save_server_config(ServerConfig(guild_id=GUILD, trigger_words=("kioku",)))
    before = stored_items(table)
    asked = command("server", "stm prompt-edit", permissions=MANAGER)
    # When a manager's click or submit carries an id kioku did not write
    if kind == "button":
        body = interact(component_click(asked, custom_id))
    else:
        body = interact(modal_submit(asked, custom_id, {"tool_description": "x", "update_nudge": "y"}))
    # Then it is refused ephemerally, as a refusal, and nothing changes
    assert title(body) == ("Nothing was changed" if kind == "button" else "Nothing was saved")
    assert "not one I know" in description(body)
    assert stored_items(table) == before
