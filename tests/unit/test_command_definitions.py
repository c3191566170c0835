"""Every registered command is one Discord would accept in a bulk overwrite (its documented limits),
so `kioku register-commands` never fails on a malformed tree."""

from __future__ import annotations

import re

import pytest

from kioku.discord.protocol import CommandType, OptionType
from kioku.services.commands.registry import MODULES, by_name, definitions
from kioku.services.commands.registry import command as command_named

COMMANDS = tuple(by_name().values())
NAME = re.compile(r"^[-_a-z0-9]{1,32}$")
MAX_DESCRIPTION = 100
MAX_OPTIONS = 25
MAX_CHOICES = 25
NESTING = {OptionType.SUB_COMMAND_GROUP: 2, OptionType.SUB_COMMAND: 1}


def check_options(options: list[dict], depth: int) -> None:
    assert len(options) <= MAX_OPTIONS
    names = [option["name"] for option in options]
    assert len(names) == len(set(names)), f"duplicate option names {names}"
    required_seen_after_optional = False
    optional_seen = False
    for option in options:
        assert NAME.match(option["name"]), option["name"]
        assert 1 <= len(option["description"]) <= MAX_DESCRIPTION, option["name"]
        kind = OptionType(option["type"])
        if kind in NESTING:
            assert depth >= NESTING[kind], f"{option['name']} nests too deep"
            check_options(option.get("options", []), depth - 1)
            continue
        assert len(option.get("choices", [])) <= MAX_CHOICES
        if option.get("required"):
            required_seen_after_optional |= optional_seen
        else:
            optional_seen = True
    assert not required_seen_after_optional, "required options must come before optional ones"


CONTEXT_MENU_NAME = re.compile(r"^\S(.{0,30}\S)?$")
"""Discord's naming rules: USER and MESSAGE commands may be mixed case and include spaces, 1-32
characters; they carry an empty description and no options (those are CHAT_INPUT's alone)."""


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if c.kind is CommandType.MESSAGE], ids=lambda command: command.name
)
def test_each_message_command_is_within_discords_limits(command):
    body = command.definition()
    assert CONTEXT_MENU_NAME.match(body["name"]) and body["type"] == CommandType.MESSAGE == 3
    assert body["description"] == "" and "options" not in body
    assert body["integration_types"] == [0] and body["contexts"] == [0, 1]


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if c.kind is CommandType.CHAT_INPUT], ids=lambda command: command.name
)
def test_each_command_is_within_discords_limits(command):
    body = command.definition()
    assert NAME.match(body["name"])
    assert 1 <= len(body["description"]) <= MAX_DESCRIPTION
    check_options(body["options"], depth=2)
    if body.get("default_member_permissions") is not None:
        assert body["default_member_permissions"].isdigit()


def test_command_names_are_unique_and_the_tree_fits_one_overwrite():
    names = [body["name"] for body in definitions()]
    assert len(names) == len(set(names))
    assert len(names) <= 100


def test_the_memories_guide_names_every_memory_command_within_discords_limits():
    import json

    from kioku.domain.models import ServerConfig, StmConfig
    from kioku.services.commands.help import (
        memories_guide_embed,
        overview_embed,
        personas_guide_embed,
        stm_guide_embed,
    )
    from kioku.services.commands.registry import by_name
    from tests.unit.ltm_fakes import settings

    # the widest values: the highest bounds, the deepest parameters
    widest = settings(
        MAX_SERVER_MEMORIES=1000,
        MAX_PERSONAL_MEMORIES=1000,
        MAX_MEMORY_LENGTH=4000,
        STM_FRESH_WINDOW_MINUTES=1234.5,
        SHORT_TERM_MEMORY_TTL_HOURS=1234.5,
        STM_JANITOR_RETENTION_DAYS=3650,
    )
    deep = ServerConfig(
        stm=StmConfig(refresh_cadence=100, nudge_injection_depth=100, content_injection_depth=100)
    )
    guide = json.dumps(memories_guide_embed(widest))
    for command in ("personal", "server"):
        group = next(o for o in by_name()[command].definition()["options"] if o["name"] == "memories")
        for sub in group["options"]:
            assert f"/{command} memories {sub['name']}" in guide
    for option in ("expires_in_days:<1-3650>", "clear_expiry:True", "order:recent", "order:least_used"):
        assert option in guide  # what an edit and a list take besides their text
    guides = (memories_guide_embed(widest), stm_guide_embed(widest, deep), overview_embed())
    for embed in (*guides, personas_guide_embed(widest)):
        assert all(len(field["value"]) <= 1024 for field in embed["fields"])
        assert (
            len(embed["title"])
            + len(embed["description"])
            + sum(len(f["name"]) + len(f["value"]) for f in embed["fields"])
            <= 6000
        )


def test_each_name_in_the_registry_loads_the_command_of_that_name():
    # The router finds a command's module by its name alone, so the table and the definitions agree
    assert [command.name for command in COMMANDS] == list(MODULES)
    assert command_named("no-such-command") is None


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.subcommands], ids=lambda command: command.name)
def test_the_router_has_a_handler_for_each_subcommand_the_definition_offers_and_no_other(command):
    assert sorted(command.subcommands) == sorted(command.subcommand_paths())
    assert command.on_command is None  # the router dispatches by path, after the command's guard


def test_the_hint_names_each_subcommand_from_the_definition():
    persona = by_name()["persona"]
    assert persona.hint() == "Try `/persona stm view|edit` or `/persona view|edit|add|list|remove|nickname`."
