"""``/persona stm view|edit`` and ``/personal stm`` through InteractionsFunction, signed, on moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.keys import ItemKey
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.discord.protocol import Permission
from kioku.domain.models import PrivacyLevel, ServerConfig, StmCategory, UserProfile
from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmLimits
from kioku.domain.stm.update_tool import StmUpdate
from kioku.entrypoints.composition import Container
from kioku.playground.events import modal_submit as submit_form
from kioku.playground.events import slash_command
from kioku.services.commands import persona, personal
from kioku.services.commands.router import route_interaction
from tests.conftest import APPLICATION_ID

GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
OTHER_CHANNEL = "300000000000000002"
USER = "400000000000000001"
OTHER_USER = "400000000000000002"
PERSONA = "kioku"
LINEAGE = 1
MANAGE_GUILD = str(int(Permission.MANAGE_GUILD))
ADMINISTRATOR = str(1 << 3)
NOTHING = "0"

RESPONSE_MESSAGE = 4
RESPONSE_MODAL = 9
ACTION_ROW = 1
TEXT_INPUT = 4
SUB_COMMAND = 1
SUB_COMMAND_GROUP = 2
BOOLEAN = 5
STRING = 3
EPHEMERAL = 64


@pytest.fixture
def invoke(interact):
    return interact


@pytest.fixture
def stm(table) -> StmStore:
    return StmStore(table)


@pytest.fixture
def configs(table) -> ConfigStore:
    return ConfigStore(table)


def guild_row(channel: str = CHANNEL) -> StmAddress:
    return StmAddress.of(GUILD, USER, channel, PERSONA)


def dm_row(user: str = USER) -> StmAddress:
    return StmAddress.of(None, user, CHANNEL, PERSONA)


def write_summary(stm: StmStore, address: StmAddress, text: str, at: datetime | None = None) -> None:
    stm.write_memory(
        StmRowIdentity(address, LINEAGE), StmUpdate(summary=text), [], at or _now(), timedelta(days=90)
    )


def write_sections(stm: StmStore, address: StmAddress, texts: dict[str, str], categories) -> None:
    stm.write_memory(
        StmRowIdentity(address, LINEAGE), StmUpdate(categories=texts), categories, _now(), timedelta(days=90)
    )


def capture_turns(stm: StmStore, address: StmAddress, count: int) -> None:
    for index in range(count):
        line = CrudeMessage("ann", USER, CrudeRole.USER, f"line {index}", _now(), message_id=f"m{index}")
        stm.capture(StmRowIdentity(address, LINEAGE), stm.get(address), [line], _now(), StmLimits())


def _now() -> datetime:
    return datetime.now(UTC)


CATEGORIES = (
    StmCategory(slug="mood", label="Mood", description="How people feel", position=2),
    StmCategory(slug="plans", label="Plans", description="What is planned", position=1),
)


def use_categories(configs: ConfigStore) -> None:
    configs.save_server_config(ServerConfig(guild_id=GUILD, categories=CATEGORIES))


def persona_command(
    subcommand: str,
    *,
    guild_id: str | None = GUILD,
    channel_id: str = CHANNEL,
    user_id: str = USER,
    permissions: str = NOTHING,
) -> dict:
    return slash_command(
        APPLICATION_ID,
        "persona",
        f"stm {subcommand}",
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=user_id,
        permissions=permissions,
    )


def modal_submit(custom_id: str, values: dict[str, str], **where) -> dict:
    return submit_form(persona_command("edit", **where), custom_id, values)


def prefilled(modal: dict) -> dict[str, str]:
    """The modal's inputs, in order, as custom_id -> prefilled value."""
    inputs = [row["components"][0] for row in modal["data"]["components"]]
    assert all(row["type"] == ACTION_ROW for row in modal["data"]["components"])
    assert all(text_input["type"] == TEXT_INPUT for text_input in inputs)
    return {text_input["custom_id"]: text_input.get("value", "") for text_input in inputs}


def embed_of(body: dict) -> dict:
    assert body["type"] == RESPONSE_MESSAGE and body["data"]["flags"] == EPHEMERAL
    return body["data"]["embeds"][0]


def embed_text(body: dict) -> str:
    embed = embed_of(body)
    fields = " | ".join(f"{f['name']}: {f['value']}" for f in embed.get("fields", []))
    return f"{embed.get('title', '')}\n{embed.get('description', '')}\n{fields}"


def field(body: dict, name: str) -> str:
    return next(f["value"] for f in embed_of(body)["fields"] if f["name"] == name)


# -- /persona stm view -------------------------------------------------------------------------------


def test_view_in_a_guild_shows_the_channels_shared_row(invoke, stm):
    # Given the channel's shared row, another channel's row, and the member's DM row
    write_summary(stm, guild_row(), "Ann and Bo plan a picnic on Saturday.")
    capture_turns(stm, guild_row(), 3)
    write_summary(stm, guild_row(OTHER_CHANNEL), "Elsewhere: a chess game.")
    write_summary(stm, dm_row(), "A private DM about a birthday gift.")
    # When any member (no permissions) views it
    body = invoke(persona_command("view"))
    # Then exactly this channel's row shows, with its counters
    text = embed_text(body)
    assert "Ann and Bo plan a picnic on Saturday." in text
    assert "chess" not in text and "birthday" not in text
    assert field(body, "Recent messages held") == "3 of 10"
    assert field(body, "Turns since refresh").startswith("3 ")
    assert field(body, "Last updated").startswith("<t:") and field(body, "Last updated").endswith(":R>")
    assert field(body, "Mode") == "Single summary"


def test_view_in_a_dm_shows_the_users_own_row(invoke, stm):
    write_summary(stm, dm_row(), "We talked about a birthday gift.")
    write_summary(stm, dm_row(OTHER_USER), "Someone else's secret.")
    write_summary(stm, guild_row(), "The server's channel talk.")
    text = embed_text(invoke(persona_command("view", guild_id=None)))
    assert "birthday gift" in text
    assert "secret" not in text and "server's channel" not in text
    assert "direct messages" in text


def test_view_with_no_memory_says_so(invoke):
    text = embed_text(invoke(persona_command("view")))
    assert "no short-term memory here yet" in text.lower()


def test_view_shows_a_summary_older_than_the_summary_ttl_as_the_persona_still_gets_it(invoke, stm):
    # Issue 11.2 changed this: summaries last until the janitor removes the row, hand-written ones too
    write_summary(stm, guild_row(), "An old conversation about trains.", at=_now() - timedelta(days=3))
    text = embed_text(invoke(persona_command("view")))
    assert "trains" in text
    assert "expired" not in text


def test_view_in_category_mode_shows_sections_in_position_order(invoke, stm, configs):
    use_categories(configs)
    write_sections(stm, guild_row(), {"mood": "Cheerful.", "plans": ""}, CATEGORIES)
    body = invoke(persona_command("view"))
    description = embed_of(body)["description"]
    assert description.index("**Plans**") < description.index("**Mood**")
    assert "Cheerful." in description and "*(empty)*" in description
    assert field(body, "Mode") == "Categories: Plans, Mood"


# -- /persona stm edit -------------------------------------------------------------------------------


def test_edit_round_trip_in_summary_mode(invoke, stm, monkeypatch):
    # Given a summary, a turn counted since, and a short summary limit
    monkeypatch.setenv("SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH", "100")
    write_summary(stm, guild_row(), "Ann plans a picnic.")
    capture_turns(stm, guild_row(), 2)
    # When a manager opens the editor
    modal = invoke(persona_command("edit", permissions=MANAGE_GUILD))
    # Then it is a modal prefilled with the live summary
    assert modal["type"] == RESPONSE_MODAL
    assert modal["data"]["custom_id"].startswith("persona:stm-edit")
    assert prefilled(modal) == {"summary": "Ann plans a picnic."}
    assert modal["data"]["components"][0]["components"][0]["max_length"] == 100
    # When the edited form comes back (padded, an unknown placeholder, {bot} and {user}, too long)
    edited = (
        "  {bot} and {user} plan a picnic {mystery} on Saturday at the lake. " + "Bring cake and games. " * 5
    )
    body = invoke(modal_submit(modal["data"]["custom_id"], {"summary": edited}, permissions=MANAGE_GUILD))
    # Then the row holds the cleaned text: trimmed, {placeholder} dropped, {user} named, cut to 100
    saved = stm.get(guild_row()).summary
    assert saved.startswith(
        "{bot} and playground-user plan a picnic mystery on Saturday"
    )  # 11.4: only braces go
    assert "{mystery}" not in saved and len(saved) <= 100 and saved.endswith("…")
    assert "saved" in embed_of(body)["title"].lower()
    # A person's edit leaves the bot's refresh cadence alone: the two counted turns still count
    assert stm.get(guild_row()).turns_since_refresh == 2


def test_edit_round_trip_in_category_mode(invoke, stm, configs):
    use_categories(configs)
    write_sections(stm, guild_row(), {"mood": "Cheerful.", "plans": "Picnic."}, CATEGORIES)
    modal = invoke(persona_command("edit", permissions=MANAGE_GUILD))
    assert prefilled(modal) == {"plans": "Picnic.", "mood": "Cheerful."}
    assert list(prefilled(modal)) == ["plans", "mood"]
    labels = [row["components"][0]["label"] for row in modal["data"]["components"]]
    assert labels == ["Plans", "Mood"]

    values = {"plans": "Picnic moved to Sunday.", "mood": ""}
    invoke(modal_submit(modal["data"]["custom_id"], values, permissions=MANAGE_GUILD))
    row = stm.get(guild_row())
    assert dict(row.categories) == {"plans": "Picnic moved to Sunday."}
    assert dict(row.category_labels) == {"plans": "Plans", "mood": "Mood"}


def test_a_dm_user_edits_their_own_row_without_permissions(invoke, stm):
    write_summary(stm, dm_row(), "Gift ideas.")
    modal = invoke(persona_command("edit", guild_id=None))
    assert prefilled(modal) == {"summary": "Gift ideas."}
    invoke(modal_submit(modal["data"]["custom_id"], {"summary": "{user} picked a book."}, guild_id=None))
    assert stm.get(dm_row()).summary == "{user} picked a book."
    assert stm.get(guild_row()) is None


@pytest.mark.parametrize("permissions", [MANAGE_GUILD, ADMINISTRATOR])
def test_managers_and_administrators_may_edit(invoke, permissions):
    assert invoke(persona_command("edit", permissions=permissions))["type"] == RESPONSE_MODAL


def test_members_without_manage_server_are_refused_and_nothing_changes(invoke, stm, table, resources):
    # Given a summary and a form opened by a manager
    write_summary(stm, guild_row(), "The real summary.")
    custom_id = invoke(persona_command("edit", permissions=MANAGE_GUILD))["data"]["custom_id"]
    before = stm.get(guild_row())
    # When a member without Manage Server runs the command, or submits the form
    refused_command = invoke(persona_command("edit"))
    refused_submit = invoke(modal_submit(custom_id, {"summary": "Vandalised."}))
    # Then both are refused ephemerally and the row is untouched
    for body in (refused_command, refused_submit):
        assert "Manage Server" in embed_of(body)["description"]
    assert stm.get(guild_row()) == before


@pytest.mark.parametrize(
    ("custom_id", "values", "reason"),
    [
        ("persona:stm-edit:00000000:0", {"summary": "x"}, "persona"),
        (None, {"plans": "x"}, "categories"),
        (None, {"summary": "x", "extra": "y"}, "categories"),
        ("persona:other-form", {"summary": "x"}, "form"),
    ],
    ids=["persona-changed", "other-fields", "extra-field", "unknown-form"],
)
def test_stale_or_foreign_forms_save_nothing(invoke, stm, custom_id, values, reason):
    write_summary(stm, guild_row(), "Kept.")
    real_id = invoke(persona_command("edit", permissions=MANAGE_GUILD))["data"]["custom_id"]
    body = invoke(modal_submit(custom_id or real_id, values, permissions=MANAGE_GUILD))
    assert reason in embed_of(body)["description"].lower()
    assert stm.get(guild_row()).summary == "Kept."


@pytest.mark.parametrize(
    "components",
    [None, "rows", [{"type": ACTION_ROW, "components": [{"custom_id": "summary", "value": 7}]}]],
    ids=["missing", "not-a-list", "non-string-value"],
)
def test_malformed_modal_submits_are_refused(invoke, stm, components):
    write_summary(stm, guild_row(), "Kept.")
    payload = modal_submit("persona:stm-edit:x:0", {}, permissions=MANAGE_GUILD)
    payload["data"]["components"] = components
    body = invoke(payload)
    assert "Nothing was saved" in embed_of(body)["description"]
    assert stm.get(guild_row()).summary == "Kept."


def test_persona_definition_leaves_view_visible_to_everyone():
    definition = persona.COMMAND.definition()
    assert "default_member_permissions" not in definition and definition["dm_permission"] is True
    group = definition["options"][0]
    assert group["type"] == SUB_COMMAND_GROUP and {o["name"] for o in group["options"]} == {"view", "edit"}


# -- /personal stm -----------------------------------------------------------------------------------


def personal_command(options: list[dict] | None = None, *, guild_id: str | None = GUILD) -> dict:
    payload = slash_command(APPLICATION_ID, "personal", guild_id=guild_id)
    payload["data"]["options"] = [{"type": SUB_COMMAND, "name": "stm", "options": options or []}]
    return payload


def cross_server(value) -> dict:
    return {"type": BOOLEAN, "name": "cross_server", "value": value}


def privacy(value) -> dict:
    return {"type": STRING, "name": "privacy", "value": value}


def test_personal_stm_shows_the_defaults(invoke, configs):
    text = embed_text(invoke(personal_command()))
    assert "**Off**" in text and "**none**" in text
    assert configs.get_user_profile(USER).version == 0


def test_personal_stm_toggles_cross_server_and_sets_privacy(invoke, configs):
    invoke(personal_command([cross_server(True)]))
    assert configs.get_user_profile(USER).cross_server_opt_in is True

    text = embed_text(invoke(personal_command([privacy("full")], guild_id=None)))
    profile = configs.get_user_profile(USER)
    assert (profile.cross_server_opt_in, profile.privacy_level) == (True, PrivacyLevel.FULL)
    assert "short-term memory" in text and "**On**" in text

    invoke(personal_command([cross_server(False), privacy("partial")]))
    profile = configs.get_user_profile(USER)
    assert (profile.cross_server_opt_in, profile.privacy_level) == (False, PrivacyLevel.PARTIAL)
    assert profile.version == 3


@pytest.mark.parametrize(
    "options",
    [[privacy("secret")], [privacy(3)], [cross_server("yes")], [cross_server(True), privacy("everything")]],
    ids=["unknown-level", "number-level", "string-bool", "one-bad-of-two"],
)
def test_invalid_personal_options_are_refused_and_change_nothing(invoke, configs, options):
    body = invoke(personal_command(options))
    assert "Nothing was changed" in embed_of(body)["description"]
    assert configs.get_user_profile(USER) == UserProfile(user_id=USER)


class ReadsBefore(ConfigStore):
    """A store that answers every read of a profile with ``stale``, read before another save."""

    def __init__(self, table, stale: UserProfile) -> None:
        super().__init__(table)
        self.stale = stale

    def get_user_profile(self, user_id: str) -> UserProfile:
        return self.stale


def test_a_concurrent_profile_change_asks_to_retry(settings, table, configs):
    # Given a profile read before someone else saved it
    stale = configs.get_user_profile(USER)
    configs.save_user_profile(UserProfile(user_id=USER, privacy_level=PrivacyLevel.FULL))
    context = Container(settings, config_store=ReadsBefore(table, stale))
    # When this command saves on top of the stale read
    body = route_interaction(personal_command([cross_server(True)]), context)
    # Then it asks to retry and the other save stands
    assert "again" in embed_of(body)["description"]
    assert configs.get_user_profile(USER).privacy_level is PrivacyLevel.FULL
    assert configs.get_user_profile(USER).cross_server_opt_in is False


def test_personal_option_texts_fit_discords_limits():
    options = personal.COMMAND.definition()["options"][0]["options"]
    assert all(len(option["description"]) <= 100 for option in options)
    choices = options[1]["choices"]
    assert [choice["value"] for choice in choices] == ["none", "partial", "full"]
    assert all(len(choice["name"]) <= 100 for choice in choices)


def test_a_hand_edit_that_creates_a_threads_row_records_its_parent(invoke, stm):
    # Given a thread of a (private) channel with no short-term memory yet
    modal = invoke(persona_command("edit", permissions=MANAGE_GUILD))
    submit = modal_submit(
        modal["data"]["custom_id"], {"summary": "plans for the trip"}, permissions=MANAGE_GUILD
    )
    submit["channel"] = {"id": CHANNEL, "name": "trip-thread", "parent_id": "300000000000000999", "type": 11}
    # When the edit is saved
    invoke(submit)
    # Then the new row knows its parent, so privacy filtering sees it as part of that channel
    row = stm.get(guild_row())
    assert (row.parent_channel_id, row.channel_name) == ("300000000000000999", "trip-thread")


def test_an_edit_form_opened_before_a_newer_save_saves_nothing(invoke, stm):
    # Given a manager who opened the editor on summary "A"
    write_summary(stm, guild_row(), "A")
    form_id = invoke(persona_command("edit", permissions=MANAGE_GUILD))["data"]["custom_id"]
    # And the bot refreshed the summary to "B" while the form was open
    write_summary(stm, guild_row(), "B")
    # When the manager submits their edit of "A"
    body = invoke(modal_submit(form_id, {"summary": "A, edited"}, permissions=MANAGE_GUILD))
    # Then "B" is kept and the manager is told to reopen the form
    assert "changed while you were editing" in embed_of(body)["description"]
    assert stm.get(guild_row()).summary == "B"


# -- /persona view and /persona edit ---------------------------------------------------------------


def persona_top(subcommand: str, **where) -> dict:
    where.setdefault("permissions", NOTHING)
    return slash_command(
        APPLICATION_ID, "persona", subcommand, guild_id=where.pop("guild_id", GUILD), **where
    )


def persona_form(custom_id: str, values: dict[str, str], **where) -> dict:
    return submit_form(persona_top("edit", **where), custom_id, values)


def test_persona_view_shows_the_default_persona_to_every_member(invoke, table):
    embed = embed_of(invoke(persona_top("view")))

    assert embed["fields"] == [{"name": "Name", "value": "Kioku", "inline": False}]
    assert embed["description"].startswith("*The default personality:*")
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


def test_persona_edit_round_trip_keeps_the_rest_of_the_configuration(invoke, configs):
    # Given a server with categories
    use_categories(configs)

    # When a manager opens the form, it is prefilled with the persona
    form = invoke(persona_top("edit", permissions=MANAGE_GUILD))
    assert form["type"] == RESPONSE_MODAL
    assert prefilled(form) == {"name": "Kioku", "prompt": ""}
    custom_id = form["data"]["custom_id"]

    # and submits a new name and personality
    saved = invoke(
        persona_form(
            custom_id,
            {"name": "  Mimi  ", "prompt": "You are {bot}, a dry-witted librarian.\n"},
            permissions=MANAGE_GUILD,
        )
    )

    # Then both are saved (trimmed), the categories kept, and everyone sees them
    assert embed_of(saved)["title"] == "Saved: the persona"
    config = configs.get_server_config(GUILD)
    assert (config.persona.name, config.persona.system_prompt) == (
        "Mimi",
        "You are {bot}, a dry-witted librarian.",
    )
    assert config.persona.persona_id == "kioku"  # the memory rows of the persona stay its own
    assert set(config.categories) == set(CATEGORIES)
    view = embed_of(invoke(persona_top("view")))
    assert view["fields"][0]["value"] == "Mimi" and "librarian" in view["description"]
    assert prefilled(invoke(persona_top("edit", permissions=MANAGE_GUILD)))["name"] == "Mimi"


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"name": "", "prompt": ""}, "1 to 32 characters"),
        ({"name": "x" * 33, "prompt": ""}, "1 to 32 characters"),
        ({"name": "[Kioku | UserID:1]", "prompt": ""}, "cannot contain"),
        ({"name": "@everyone", "prompt": ""}, "cannot contain"),
        ({"name": "...", "prompt": ""}, "a letter or a digit"),
        ({"name": "Mimi", "prompt": "p" * 4001}, "longer than Discord allows"),
        ({"name": "Mimi"}, "without its fields"),
    ],
)
def test_a_bad_persona_is_refused_as_such_and_nothing_is_saved(invoke, configs, values, complaint):
    configs.save_server_config(ServerConfig(guild_id=GUILD))
    custom_id = invoke(persona_top("edit", permissions=MANAGE_GUILD))["data"]["custom_id"]

    embed = embed_of(invoke(persona_form(custom_id, values, permissions=MANAGE_GUILD)))

    assert embed["title"] == "Nothing was saved" and complaint in embed["description"]
    assert configs.get_server_config(GUILD).persona.name == "Kioku"


def test_a_persona_form_filled_before_another_save_is_stale(invoke, configs):
    configs.save_server_config(ServerConfig(guild_id=GUILD))
    custom_id = invoke(persona_top("edit", permissions=MANAGE_GUILD))["data"]["custom_id"]
    invoke(persona_form(custom_id, {"name": "First", "prompt": ""}, permissions=MANAGE_GUILD))

    late = embed_of(
        invoke(persona_form(custom_id, {"name": "Second", "prompt": ""}, permissions=MANAGE_GUILD))
    )

    assert "changed meanwhile" in late["description"]
    assert configs.get_server_config(GUILD).persona.name == "First"


def test_only_managers_change_the_persona_and_only_in_a_server(invoke, configs, table):
    configs.save_server_config(ServerConfig(guild_id=GUILD))
    custom_id = invoke(persona_top("edit", permissions=MANAGE_GUILD))["data"]["custom_id"]

    refused = [
        invoke(persona_top("edit")),
        invoke(persona_form(custom_id, {"name": "Vandal", "prompt": ""})),
    ]
    in_a_dm = invoke(persona_top("edit", guild_id=None, permissions=MANAGE_GUILD))

    assert [embed_of(body)["title"] for body in refused] == ["Not allowed", "Not allowed"]
    assert embed_of(in_a_dm)["title"] == "Only in a server"
    assert configs.get_server_config(GUILD).persona.name == "Kioku"


def test_persona_edit_and_view_are_top_level_beside_stm():
    options = {option["name"]: option for option in persona.COMMAND.definition()["options"]}
    assert set(options) == {"stm", "view", "edit", "add", "list", "remove", "nickname"}
    assert options["view"]["type"] == options["edit"]["type"] == SUB_COMMAND
