"""``/persona view`` and ``/persona stm view|edit`` on a fake command context: what is shown, and a
hand edit of the channel's short-term memory written only onto the text the form showed."""

from __future__ import annotations

from kioku.domain.models import ServerConfig
from kioku.domain.stm.entries import StmAddress, StmEntry
from kioku.services.commands.error_replies import Refusal
from kioku.services.commands.persona import STALE_FORM
from tests.unit.command_fakes import (
    CHANNEL,
    GUILD,
    MANAGE_GUILD,
    NOW,
    FakeCommandContext,
    FakeShortTermRows,
    answer,
    command,
    embed,
    submit,
)

MAIN = ServerConfig(GUILD).main_persona
HERE = StmAddress.of(GUILD, "unused", CHANNEL, MAIN.persona_id)


def test_view_shows_the_main_personas_name():
    reply = answer(command("persona", "view"), FakeCommandContext())
    assert embed(reply)["fields"] == [{"name": "Name", "value": MAIN.name, "inline": False}]


def test_stm_view_shows_the_channels_summary_to_anyone():
    rows = FakeShortTermRows(
        StmEntry(HERE, MAIN.lineage_id, last_updated=NOW, summary="We planned a picnic.")
    )
    reply = answer(command("persona", "stm view"), FakeCommandContext(stm_store=rows))
    assert "We planned a picnic." in embed(reply)["description"]


def test_stm_edit_needs_manage_server():
    context = FakeCommandContext()
    reply = answer(command("persona", "stm edit"), context)
    assert embed(reply)["title"] == Refusal.NOT_ALLOWED
    assert context.stm_store.rows == {}


def test_the_edit_form_writes_the_summary_it_was_opened_on_and_refuses_a_stale_one():
    # Given a manager who opens the form on an empty channel
    context = FakeCommandContext()
    form = answer(command("persona", "stm edit", permissions=MANAGE_GUILD), context)
    custom_id = form["data"]["custom_id"]
    # When they submit a summary, Then it is written to this channel's row of the main persona
    saved = answer(submit(custom_id, {"summary": "  Picnic on Sunday  "}, permissions=MANAGE_GUILD), context)
    assert embed(saved)["title"] == "Short-term memory saved"
    row = context.stm_store.get(HERE)
    assert row is not None and (row.summary, row.lineage_id) == ("Picnic on Sunday", MAIN.lineage_id)
    # When the same form (opened before that save) is submitted again, Then nothing is written
    stale = answer(submit(custom_id, {"summary": "Something else"}, permissions=MANAGE_GUILD), context)
    assert embed(stale)["description"] == STALE_FORM.format(what="The memory")
    assert context.stm_store.get(HERE) == row


def test_the_persona_form_renames_the_main_persona_on_the_version_it_showed():
    context = FakeCommandContext()
    form = answer(command("persona", "edit", permissions=MANAGE_GUILD), context)
    custom_id = form["data"]["custom_id"]
    saved = answer(
        submit(custom_id, {"name": "Mori", "prompt": "A calm librarian."}, permissions=MANAGE_GUILD), context
    )
    assert embed(saved)["title"] == "Saved: the persona"
    persona = context.config_store.get_server_config(GUILD).persona
    assert (persona.name, persona.system_prompt) == ("Mori", "A calm librarian.")
    stale = answer(submit(custom_id, {"name": "Other", "prompt": ""}, permissions=MANAGE_GUILD), context)
    assert embed(stale)["title"] == Refusal.NOTHING_SAVED
    assert context.config_store.get_server_config(GUILD).persona.name == "Mori"
