"""``/capabilities manage`` on a fake command context: who may, what is shown, what is saved."""

from __future__ import annotations

from kioku.domain.models import Capabilities, ServerConfig
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
)


def test_a_member_without_manage_server_is_refused_and_nothing_is_saved():
    context = FakeCommandContext()
    reply = answer(command("capabilities", "manage", {"short_term_memory": False}), context)
    assert embed(reply)["title"] == Refusal.NOT_ALLOWED
    assert context.config_store.saves == 0


def test_with_no_option_the_current_capabilities_are_shown():
    context = FakeCommandContext(
        FakeConfigurations(ServerConfig(GUILD, capabilities=Capabilities(self_teaching_enabled=False)))
    )
    reply = answer(command("capabilities", "manage", permissions=MANAGE_GUILD), context)
    assert embed(reply)["title"] == "Capabilities"
    assert embed_fields(reply) == {
        "short_term_memory": "on",
        "self_teaching": "off",
        "personal_memories": "on",
    }
    assert context.config_store.saves == 0


def test_switching_one_off_saves_it_and_keeps_the_others():
    context = FakeCommandContext()
    reply = answer(
        command("capabilities", "manage", {"personal_memories": False}, permissions=MANAGE_GUILD), context
    )
    assert embed(reply)["title"] == "Saved: capabilities"
    saved = context.config_store.get_server_config(GUILD)
    assert saved.version == 1
    assert saved.capabilities == Capabilities(personal_memories_enabled=False)


def test_a_configuration_saved_meanwhile_is_not_overwritten():
    # Given a store whose configuration someone else saves between our read and our write
    class SavedMeanwhile(FakeConfigurations):
        def get_server_config(self, guild_id: str) -> ServerConfig:
            read = super().get_server_config(guild_id)
            self.servers[guild_id] = ServerConfig(guild_id, version=read.version + 1)
            return read

    context = FakeCommandContext(SavedMeanwhile())
    reply = answer(
        command("capabilities", "manage", {"self_teaching": False}, permissions=MANAGE_GUILD), context
    )
    assert embed(reply)["description"] == STALE_SETTINGS
    assert context.config_store.servers[GUILD].capabilities == Capabilities()
