"""``/server stm …`` on a fake command context: the parameters shown and saved, the prompts form
opened on the version read and saved only onto it."""

from __future__ import annotations

from kioku.discord.interactions import ResponseType
from kioku.domain.models import ServerConfig, StmConfig
from kioku.services.commands.error_replies import STALE_SETTINGS, Refusal
from tests.unit.command_fakes import (
    GUILD,
    MANAGE_GUILD,
    FakeCommandContext,
    FakeConfigurations,
    answer,
    command,
    embed,
    embed_fields,
    submit,
)


def test_parameters_are_shown_then_one_is_saved():
    context = FakeCommandContext()
    shown = answer(command("server", "stm parameters", permissions=MANAGE_GUILD), context)
    assert embed_fields(shown)["refresh_cadence"] == "5 turns" and context.config_store.saves == 0

    saved = answer(
        command("server", "stm parameters", {"refresh_cadence": 3}, permissions=MANAGE_GUILD), context
    )
    assert embed(saved)["title"] == "Saved: short-term memory parameters"
    assert embed_fields(saved)["refresh_cadence"] == "3 turns"
    assert context.config_store.get_server_config(GUILD).stm == StmConfig(refresh_cadence=3)


def test_a_member_without_manage_server_changes_nothing():
    context = FakeCommandContext()
    reply = answer(command("server", "stm parameters", {"refresh_cadence": 3}), context)
    assert embed(reply)["title"] == Refusal.NOT_ALLOWED
    assert context.config_store.servers == {}


def test_the_prompts_form_saves_onto_the_version_it_was_opened_on_only():
    context = FakeCommandContext(FakeConfigurations(ServerConfig(GUILD, version=4)))
    form = answer(command("server", "stm prompt-edit", permissions=MANAGE_GUILD), context)
    assert form["type"] == ResponseType.MODAL and form["data"]["custom_id"] == "server:prompt-edit:4"

    values = {"tool_description": "Keep it short", "update_nudge": ""}
    answer(submit("server:prompt-edit:4", values, permissions=MANAGE_GUILD), context)
    stored = context.config_store.get_server_config(GUILD)
    assert (stored.version, stored.stm.tool_description_override) == (5, "Keep it short")

    # the same form submitted again was filled from version 4, which is no longer stored
    stale = answer(
        submit("server:prompt-edit:4", {**values, "tool_description": "Other"}, permissions=MANAGE_GUILD),
        context,
    )
    assert embed(stale)["description"] == STALE_SETTINGS
    assert context.config_store.get_server_config(GUILD).stm.tool_description_override == "Keep it short"


def test_an_unknown_subcommand_is_checked_for_manage_server_first_then_hinted_from_the_definition():
    context = FakeCommandContext()
    stranger = answer(command("server", "stm nonsense"), context)
    manager = answer(command("server", "stm nonsense", permissions=MANAGE_GUILD), context)
    assert embed(stranger)["title"] == Refusal.NOT_ALLOWED
    assert embed(manager)["title"] == Refusal.NOT_UNDERSTOOD
    assert embed(manager)["description"].startswith(
        "Try `/server stm parameters|prompt-edit|categories-edit`, "
    )
