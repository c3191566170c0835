"""``/server stm …`` and ``/capabilities manage`` through the real interactions handler, on moto."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.keys import ItemKey
from kioku.discord.protocol import Permission
from kioku.domain.models import Capabilities, RenderMode, ServerConfig, StmCategory, StmConfig
from kioku.entrypoints.composition import Container
from kioku.playground.events import modal_submit as submit_form
from kioku.playground.events import slash_command
from kioku.services.commands import capabilities, server
from kioku.services.commands.router import route_interaction
from tests.conftest import APPLICATION_ID

GUILD = "200000000000000001"
MANAGER = str(Permission.MANAGE_GUILD | 1 << 11)
NOT_MANAGER = str(1 << 11 | 1 << 10)
MODAL_SUBMIT = 5
ACTION_ROW, SHORT, PARAGRAPH = 1, 1, 2
PLANS = StmCategory(slug="plans", label="Plans", description="what people mean to do", position=0)
MOOD = StmCategory(slug="mood", label="Mood", description="", position=1)


@pytest.fixture
def invoke(interact):
    return interact


@pytest.fixture
def store(table) -> ConfigStore:
    return ConfigStore(table)


def command(
    name: str, *path: str, permissions: str = MANAGER, guild_id: str | None = GUILD, **options
) -> dict:
    """``/name group sub option:value…`` as Discord sends it, with typed options and member permissions."""
    return slash_command(
        APPLICATION_ID, name, " ".join(path) or None, options, guild_id=guild_id, permissions=permissions
    )


def modal_submit(custom_id: str, values: dict[str, str], *, permissions: str = MANAGER) -> dict:
    """The MODAL_SUBMIT interaction Discord sends when a form of text inputs is submitted: every
    input of the categories form comes back (Discord sends them all), blank unless given."""
    if custom_id.startswith("server:categories-edit"):
        capacity = min(int(os.environ.get("STM_MAX_CATEGORIES", "5")), 5)
        values = {f"category_{n}": "" for n in range(1, capacity + 1)} | values
    return submit_form(command("unused", permissions=permissions), custom_id, values)


def text_inputs(modal: dict) -> list[dict]:
    rows = modal["data"]["components"]
    assert all(row["type"] == ACTION_ROW and len(row["components"]) == 1 for row in rows)
    return [row["components"][0] for row in rows]


def assert_ephemeral_error(body: dict, *phrases: str) -> None:
    assert body["type"] == 4 and body["data"]["flags"] == 64
    text = body["data"]["embeds"][0]["description"]
    for phrase in phrases:
        assert phrase in text


def fields(body: dict) -> dict[str, str]:
    return {field["name"]: field["value"] for field in body["data"]["embeds"][0]["fields"]}


# -- definitions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("definition", [server.COMMAND.definition(), capabilities.COMMAND.definition()])
def test_commands_are_guild_only_and_hidden_from_non_managers(definition):
    assert definition["dm_permission"] is False
    assert definition["default_member_permissions"] == "32"


def test_parameter_options_carry_their_ranges_and_choices():
    group = server.COMMAND.definition()["options"][0]
    assert group["name"] == "stm"
    parameters = {o["name"]: o for o in group["options"][0]["options"]}
    assert (parameters["content_depth"]["min_value"], parameters["content_depth"]["max_value"]) == (-1, 50)
    assert (parameters["refresh_cadence"]["min_value"], parameters["refresh_cadence"]["max_value"]) == (1, 50)
    assert [c["value"] for c in parameters["render_mode"]["choices"]] == ["crude_summary", "supersede"]
    assert not any(option.get("required") for option in parameters.values())


# -- /server stm parameters ------------------------------------------------------------------------


def test_parameters_without_options_show_the_defaults_and_store_nothing(invoke, store, table):
    body = invoke(command("server", "stm", "parameters"))
    assert body["data"]["flags"] == 64
    shown = fields(body)
    assert shown["refresh_cadence"] == "5 turns"
    assert shown["render_mode"] == "crude_summary"
    assert shown["crude_message_count"] == "6 (default)"
    assert shown["content_depth"].startswith("-1")
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


def test_parameters_are_saved_and_shown(invoke, store):
    # Given a server with a prompt override already set
    store.save_server_config(ServerConfig(guild_id=GUILD, stm=StmConfig(update_nudge_override="Refresh!")))
    # When an admin sets every parameter
    body = invoke(
        command(
            "server",
            "stm",
            "parameters",
            refresh_cadence=8,
            render_mode="supersede",
            crude_message_count=0,
            nudge_depth=1,
            content_depth=3,
        )
    )
    # Then they are stored next to the untouched override, and shown
    saved = store.get_server_config(GUILD)
    assert saved.stm == StmConfig(
        refresh_cadence=8,
        render_mode=RenderMode.SUPERSEDE,
        crude_message_count=0,
        nudge_injection_depth=1,
        content_injection_depth=3,
        update_nudge_override="Refresh!",
    )
    assert saved.version == 2
    assert body["data"]["embeds"][0]["title"].startswith("Saved")
    assert fields(body)["render_mode"] == "supersede" and fields(body)["crude_message_count"] == "0"


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"refresh_cadence": 0}, "`refresh_cadence` must be a whole number from 1 to 50"),
        ({"content_depth": -2}, "`content_depth`"),
        ({"nudge_depth": 51}, "`nudge_depth`"),
        ({"crude_message_count": "6"}, "`crude_message_count`"),
        ({"render_mode": "everything"}, "`render_mode` must be one of"),
    ],
)
def test_out_of_range_parameters_are_refused_and_nothing_is_saved(invoke, table, options, complaint):
    body = invoke(command("server", "stm", "parameters", **{"nudge_depth": 3, **options}))
    assert_ephemeral_error(body, "Nothing was saved", complaint)
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


class SomeoneSavesMeanwhile(ConfigStore):
    """A store whose every read of a server is followed by someone else's save of it."""

    def get_server_config(self, guild_id):
        config = super().get_server_config(guild_id)
        ConfigStore(self._table).save_server_config(replace(config, trigger_words=("kioku",)))
        return config


def test_a_concurrent_save_is_reported_and_kept(settings, table, store):
    # Given someone else saves between our read and our write
    context = Container(settings, config_store=SomeoneSavesMeanwhile(table))
    # When the admin's change is saved
    body = route_interaction(command("server", "stm", "parameters", refresh_cadence=9), context)
    # Then it is refused as stale and the other change survives
    assert_ephemeral_error(body, "changed meanwhile", "try again")
    saved = store.get_server_config(GUILD)
    assert saved.trigger_words == ("kioku",) and saved.stm.refresh_cadence == 5


# -- /server stm prompt-edit -----------------------------------------------------------------------


def test_prompt_edit_round_trip(invoke, store):
    # Given a server with a custom tool description
    store.save_server_config(
        ServerConfig(guild_id=GUILD, stm=StmConfig(tool_description_override="Summarise for {bot}."))
    )
    # When an admin opens the form
    form = invoke(command("server", "stm", "prompt-edit"))
    # Then it is a modal of two paragraph inputs, prefilled, tied to the stored version
    assert form["type"] == 9
    assert form["data"]["custom_id"] == "server:prompt-edit:1"
    description, nudge = text_inputs(form)
    assert (description["custom_id"], description["style"], description["value"]) == (
        "tool_description",
        PARAGRAPH,
        "Summarise for {bot}.",
    )
    assert nudge["custom_id"] == "update_nudge" and "value" not in nudge
    assert description["max_length"] == nudge["max_length"] == 2000
    # When it is submitted with a new reminder and a blanked description
    body = invoke(
        modal_submit(
            form["data"]["custom_id"],
            {"tool_description": "   ", "update_nudge": " Update {category_labels} now, {user}. "},
        )
    )
    # Then the description is back to our default and the reminder is saved
    stm = store.get_server_config(GUILD).stm
    assert stm.tool_description_override is None
    assert stm.update_nudge_override == "Update {category_labels} now, {user}."
    assert body["data"]["flags"] == 64
    embed = body["data"]["embeds"][0]
    for placeholder in ("{category_labels}", "{user}", "{bot}"):
        assert placeholder in embed["description"]
    assert fields(body)["Tool description"] == "our default"


def test_an_overlong_prompt_is_refused(invoke, store):
    body = invoke(modal_submit("server:prompt-edit:0", {"tool_description": "x" * 2001, "update_nudge": ""}))
    assert_ephemeral_error(body, "limit is 2000")
    assert store.get_server_config(GUILD).version == 0


def test_a_form_submitted_after_someone_else_saved_is_stale(invoke, store):
    # Given the form is opened, then someone else changes the prompts
    form = invoke(command("server", "stm", "prompt-edit"))
    store.save_server_config(ServerConfig(guild_id=GUILD, stm=StmConfig(update_nudge_override="theirs")))
    # When the form is submitted
    body = invoke(modal_submit(form["data"]["custom_id"], {"tool_description": "", "update_nudge": "mine"}))
    # Then it is refused and their text stays
    assert_ephemeral_error(body, "changed meanwhile")
    assert store.get_server_config(GUILD).stm.update_nudge_override == "theirs"


@pytest.mark.parametrize(
    "data",
    [
        {"custom_id": "server:prompt-edit:0", "components": "nope"},
        {
            "custom_id": "server:prompt-edit:0",
            "components": [{"components": [{"custom_id": 5, "value": "x"}]}],
        },
        {
            "custom_id": "server:prompt-edit:0",
            "components": [{"components": [{"custom_id": "update_nudge"}]}],
        },
        {"custom_id": "server:prompt-edit", "components": []},
        {"custom_id": "server:wipe-everything:0", "components": []},
    ],
    ids=["rows-not-a-list", "non-string-id", "field-missing", "no-version", "unknown-form"],
)
def test_malformed_form_submits_are_refused(invoke, table, data):
    payload = modal_submit("unused", {})
    payload["data"] = data
    body = invoke(payload)
    assert_ephemeral_error(body, "Nothing was saved")
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


# -- /server stm categories-edit -------------------------------------------------------------------


def test_categories_edit_round_trip(invoke, store):
    # Given two stored categories
    store.save_server_config(ServerConfig(guild_id=GUILD, categories=(PLANS, MOOD)))
    # When the form is opened
    form = invoke(command("server", "stm", "categories-edit"))
    # Then it has one short input per allowed category, the stored ones prefilled
    assert form["type"] == 9 and form["data"]["custom_id"] == "server:categories-edit:1"
    inputs = text_inputs(form)
    assert [i["custom_id"] for i in inputs] == [f"category_{n}" for n in range(1, 6)]
    assert all(i["style"] == SHORT for i in inputs)
    assert [i.get("value", "") for i in inputs] == ["Plans: what people mean to do", "Mood", "", "", ""]
    # When Mood moves first, Plans is dropped and a new one is added
    body = invoke(
        modal_submit(
            form["data"]["custom_id"],
            {
                "category_1": "Mood: how it feels",
                "category_2": "",
                "category_3": "Open questions: unanswered",
            },
        )
    )
    # Then the categories are saved in form order, Mood keeping its slug
    assert store.get_server_config(GUILD).categories == (
        StmCategory(slug="mood", label="Mood", description="how it feels", position=0),
        StmCategory(slug="open_questions", label="Open questions", description="unanswered", position=1),
    )
    assert "**Open questions** (`open_questions`)" in body["data"]["embeds"][0]["description"]


def test_an_empty_categories_form_returns_to_single_summary_mode(invoke, store):
    store.save_server_config(ServerConfig(guild_id=GUILD, categories=(PLANS,)))
    body = invoke(modal_submit("server:categories-edit:1", {f"category_{n}": "" for n in range(1, 6)}))
    assert store.get_server_config(GUILD).categories == ()
    assert "one running summary" in body["data"]["embeds"][0]["description"]


def test_the_form_offers_no_more_inputs_than_the_limit(invoke, monkeypatch):
    monkeypatch.setenv("STM_MAX_CATEGORIES", "3")
    assert len(text_inputs(invoke(command("server", "stm", "categories-edit")))) == 3


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"category_1": "Plans: a", "category_2": "PLANS: b"}, "repeats category 1"),
        # more inputs than a Discord modal can hold: a forged submit, refused as malformed
        ({f"category_{n}": f"Topic {n}" for n in range(1, 8)}, "the form came back"),
        ({"category_1": "x" * 51}, "longer than 50 characters"),
        ({"category_1": "Plans: " + "d" * 301}, "longer than 300 characters"),
    ],
    ids=["duplicate", "too-many", "long-label", "long-description"],
)
def test_bad_categories_are_refused_and_nothing_is_saved(invoke, store, values, complaint):
    store.save_server_config(ServerConfig(guild_id=GUILD, categories=(PLANS,)))
    body = invoke(modal_submit("server:categories-edit:1", values))
    assert_ephemeral_error(body, "Nothing was saved", complaint)
    saved = store.get_server_config(GUILD)
    assert saved.categories == (PLANS,) and saved.version == 1


# -- /capabilities manage --------------------------------------------------------------------------


def test_capabilities_without_options_show_the_current_state(invoke, store):
    store.save_server_config(
        ServerConfig(guild_id=GUILD, capabilities=Capabilities(self_teaching_enabled=False))
    )
    body = invoke(command("capabilities", "manage"))
    assert fields(body) == {"short_term_memory": "on", "self_teaching": "off", "personal_memories": "on"}
    assert store.get_server_config(GUILD).version == 1


def test_capabilities_are_saved(invoke, store):
    body = invoke(command("capabilities", "manage", short_term_memory=False, personal_memories=True))
    assert store.get_server_config(GUILD).capabilities == Capabilities(short_term_memory_enabled=False)
    assert fields(body)["short_term_memory"] == "off"


def test_a_capability_that_is_not_a_boolean_is_refused(invoke, table):
    body = invoke(command("capabilities", "manage", short_term_memory="no"))
    assert_ephemeral_error(body, "`short_term_memory` must be true or false")
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


# -- who may -----------------------------------------------------------------------------------------


def _attempts(permissions: str, guild_id: str | None = GUILD) -> list[dict]:
    submit = modal_submit("server:categories-edit:0", {"category_1": "Plans"}, permissions=permissions)
    if guild_id is None:
        submit.pop("guild_id")
        submit["user"] = submit.pop("member")["user"]
    return [
        command("server", "stm", "parameters", refresh_cadence=2, permissions=permissions, guild_id=guild_id),
        command("server", "stm", "parameters", permissions=permissions, guild_id=guild_id),
        command("server", "stm", "prompt-edit", permissions=permissions, guild_id=guild_id),
        command("capabilities", "manage", self_teaching=False, permissions=permissions, guild_id=guild_id),
        submit,
    ]


@pytest.mark.parametrize("attempt", range(5))
def test_members_without_manage_server_are_refused_and_nothing_changes(invoke, table, attempt):
    body = invoke(_attempts(NOT_MANAGER)[attempt])
    assert_ephemeral_error(body, "Manage Server")
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


@pytest.mark.parametrize("attempt", range(5))
def test_direct_messages_are_refused(invoke, table, attempt):
    body = invoke(_attempts(MANAGER, guild_id=None)[attempt])
    assert_ephemeral_error(body, "direct messages")
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


def test_a_categories_form_that_comes_back_without_its_fields_changes_nothing(invoke, store):
    store.save_server_config(ServerConfig(guild_id=GUILD, categories=(PLANS,)))
    submit = modal_submit("server:categories-edit:1", {})
    submit["data"]["components"] = []
    assert_ephemeral_error(invoke(submit), "Nothing was saved")
    assert store.get_server_config(GUILD).categories == (PLANS,)


def test_help_stm_shows_the_values_in_force_and_every_macro_that_works(invoke, store, monkeypatch):
    # Given a deployment with its own bounds and a server with its own parameters
    from kioku.config import get_settings
    from kioku.domain.stm.update_tool import PROMPT_MACROS

    monkeypatch.setenv("STM_MAX_CATEGORIES", "4")
    monkeypatch.setenv("STM_FRESH_WINDOW_MINUTES", "90")
    monkeypatch.setenv("STM_FRESH_INJECTION_DEPTH", "3")
    monkeypatch.setenv("SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT", "8")
    monkeypatch.setenv("SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS", "4")
    monkeypatch.setenv("SHORT_TERM_MEMORY_TTL_HOURS", "6")
    monkeypatch.setenv("STM_JANITOR_RETENTION_DAYS", "30")
    get_settings.cache_clear()
    stm = StmConfig(refresh_cadence=9, nudge_injection_depth=4, content_injection_depth=1)
    store.save_server_config(ServerConfig(guild_id=GUILD, stm=stm))
    # When anyone asks for the guide there
    body = invoke(command("help", "stm", permissions="0"))
    # Then it states those values, not the defaults
    embed = body["data"]["embeds"][0]
    text = embed["description"] + " ".join(f["name"] + " " + f["value"] for f in embed["fields"])
    for stated in (
        "up to 4 categories",
        "the latest 8 raw messages",
        "up to 4 other channels",
        "cadence (here 9)",
        "Nudge depth (here 4)",
        "Content depth (here 1)",
        "sits 1 turn above the newest message",
        "in the last 90 minutes",
        "depth 3 at most",
        "Raw messages last 6 hours",
        "quiet for 30 days",
    ):
        assert stated in text, stated
    assert "(default 5)" not in text
    # and the prompt guide names every macro the prompts fill in
    for name in PROMPT_MACROS:
        assert f"`{{{name}}}`" in text


def test_help_memories_shows_the_configured_limits(invoke, monkeypatch):
    from kioku.config import get_settings

    monkeypatch.setenv("MAX_SERVER_MEMORIES", "40")
    monkeypatch.setenv("MAX_PERSONAL_MEMORIES", "30")
    monkeypatch.setenv("MAX_MEMORY_LENGTH", "500")
    get_settings.cache_clear()
    body = invoke(command("help", "memories", permissions="0", guild_id=None))
    description = body["data"]["embeds"][0]["description"]
    assert "up to 40 memories for a server and 30 about each person" in description
    assert "at most 500 characters" in description


def test_help_alone_or_overview_says_what_kioku_is_and_names_every_guide(invoke):
    from kioku.services.commands.help import GUIDES

    # Given /help as Discord sends its first subcommand, and as a client that sends none
    for body in (
        invoke(command("help", "overview", permissions="0", guild_id=None)),
        invoke(command("help", permissions="0")),
    ):
        # Then an overview (ephemeral), not an error, pointing at each deeper guide and at Why
        assert body["data"]["flags"] & 64
        embed = body["data"]["embeds"][0]
        assert embed["title"].startswith("kioku")
        text = json.dumps(embed)
        for topic in set(GUIDES) - {"overview"}:
            assert f"/help {topic}" in text, topic
        assert "Why this answer?" in text and "/personal memories forget" in text


def test_help_personas_explains_calling_them_with_the_configured_limit(invoke, monkeypatch):
    from kioku.config import get_settings

    monkeypatch.setenv("MAX_PERSONAS_PER_SERVER", "7")
    get_settings.cache_clear()
    embed = invoke(command("help", "personas", permissions="0"))["data"]["embeds"][0]
    assert "up to 7 personas" in embed["description"]
    assert "Manage Webhooks" in json.dumps(embed) and "/persona add" in json.dumps(embed)


# -- /server addressing ----------------------------------------------------------------------------


def relayed(
    content: str, *, message_id: str, bot: bool = False, channel_id: str = "300000000000000001"
) -> dict:
    author = {"id": "400000000000000009" if bot else "400000000000000001", "username": "x", "bot": bot}
    return {
        "id": message_id,
        "channel_id": channel_id,
        "guild_id": GUILD,
        "member": {"nick": None, "roles": []},
        "author": author,
        "content": content,
        "timestamp": "2026-11-30T01:00:00.000000+00:00",
        "type": 0,
        "mentions": [],
        "attachments": [],
        "embeds": [],
    }


def test_addressing_without_options_shows_the_current_words_and_stores_nothing(invoke, table):
    body = invoke(command("server", "addressing"))

    assert body["data"]["flags"] == 64
    assert fields(body) == {
        "Trigger words": "None",
        "Answers other bots": "**No**: other bots and webhooks are never answered.",
        "Always channels": "None: kioku answers only when called",
    }
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


def test_trigger_words_and_other_bots_set_by_command_are_what_the_relay_answers(invoke, store, relay_event):
    # Given a server whose persona was set before
    store.save_server_config(ServerConfig(guild_id=GUILD, stm=StmConfig(refresh_cadence=3)))
    assert (
        relay_event("MESSAGE_CREATE", relayed("hey Mimi, what's up", message_id="700000000000000001")) == 204
    )

    # When a manager sets the words and lets other bots call it
    body = invoke(
        command("server", "addressing", trigger_words=" mimi ,Hey Bot,, MIMI", answer_other_bots=True)
    )

    # Then they are saved (repeats and blanks dropped), the rest of the configuration kept
    assert fields(body)["Trigger words"] == "`mimi`, `Hey Bot`"
    saved = store.get_server_config(GUILD)
    assert (saved.trigger_words, saved.answer_other_bots) == (("mimi", "Hey Bot"), True)
    assert saved.stm.refresh_cadence == 3
    # and RelayFunction answers them, from people and now from bots
    assert (
        relay_event("MESSAGE_CREATE", relayed("hey Mimi, what's up", message_id="700000000000000002")) == 202
    )
    assert (
        relay_event("MESSAGE_CREATE", relayed("HEY  BOT go", message_id="700000000000000003", bot=True))
        == 202
    )
    assert (
        relay_event("MESSAGE_CREATE", relayed("mimikry is no trigger", message_id="700000000000000004"))
        == 204
    )

    # When one option is given, only that one changes
    invoke(command("server", "addressing", answer_other_bots=False))
    assert store.get_server_config(GUILD).trigger_words == ("mimi", "Hey Bot")
    assert relay_event("MESSAGE_CREATE", relayed("hey bot", message_id="700000000000000005", bot=True)) == 204

    # and a lone comma clears the words
    invoke(command("server", "addressing", trigger_words=","))
    assert store.get_server_config(GUILD).trigger_words == ()


ALWAYS_CHANNEL, QUIET_CHANNEL = "300000000000000007", "300000000000000001"


def queued_jobs(resources) -> list[dict]:
    import boto3

    sqs = boto3.client("sqs")
    found = sqs.receive_message(QueueUrl=resources.turn_queue_url, MaxNumberOfMessages=10)
    return [json.loads(m["Body"]) for m in found.get("Messages", [])]


def test_an_always_channel_answers_every_members_message_as_its_persona(
    invoke, store, relay_event, resources
):
    # Given Luna, and a manager making a channel hers in always mode (and answering other bots)
    store.save_server_config(
        replace(
            ServerConfig(guild_id=GUILD),
            alters=(
                replace(ServerConfig().persona, persona_id="600000000000000001", name="Luna", alter=True),
            ),
        )
    )
    invoke(command("server", "addressing", answer_other_bots=True))
    body = invoke(command("server", "addressing", channel=ALWAYS_CHANNEL, mode="always", persona="Luna"))
    assert (
        f"<#{ALWAYS_CHANNEL}>: every member's message, answered by **Luna**"
        in fields(body)["Always channels"]
    )
    assert store.get_server_config(GUILD).always_channels == {ALWAYS_CHANNEL: "600000000000000001"}

    # Then a member's plain message there is Luna's turn; elsewhere, and from a bot, it is not one
    plain = relayed("nice weather", message_id="700000000000000011", channel_id=ALWAYS_CHANNEL)
    assert relay_event("MESSAGE_CREATE", plain) == 202
    assert relay_event("MESSAGE_CREATE", relayed("nice weather", message_id="700000000000000012")) == 204
    from_bot = relayed("beep", message_id="700000000000000013", bot=True, channel_id=ALWAYS_CHANNEL)
    assert relay_event("MESSAGE_CREATE", from_bot) == 204
    (job,) = queued_jobs(resources)
    assert (job["turn_id"], job["persona"]["name"]) == ("700000000000000011", "Luna")
    assert job["always"] is True  # its turn may answer a burst

    # When the channel is set back to addressed, a plain message there is not a turn any more
    body = invoke(command("server", "addressing", channel=ALWAYS_CHANNEL, mode="addressed"))
    assert fields(body)["Always channels"] == "None: kioku answers only when called"
    again = relayed("still nice", message_id="700000000000000014", channel_id=ALWAYS_CHANNEL)
    assert relay_event("MESSAGE_CREATE", again) == 204


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"mode": "always"}, "a channel and a mode"),
        ({"channel": ALWAYS_CHANNEL}, "a channel and a mode"),
        ({"channel": ALWAYS_CHANNEL, "mode": "loud"}, "a channel and a mode"),
        ({"channel": ALWAYS_CHANNEL, "mode": "always", "trigger_words": "hey"}, "on its own"),
        ({"trigger_words": "a"}, "2 to 32 characters"),
        ({"trigger_words": "x" * 33}, "2 to 32 characters"),
        ({"trigger_words": ",".join(f"word{n}" for n in range(11))}, "at most 10"),
        ({"trigger_words": "--, ok"}, "needs a letter"),
        ({"trigger_words": "<@100000000000000001>"}, "looks like a mention"),
        ({"trigger_words": 5}, "comma-separated"),
        ({"answer_other_bots": "yes"}, "true or false"),
    ],
)
def test_bad_addressing_is_refused_as_such_and_nothing_is_saved(invoke, table, options, complaint):
    body = invoke(command("server", "addressing", **options))

    assert_ephemeral_error(body, complaint)
    assert body["data"]["embeds"][0]["title"] == "Nothing was saved"
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None


def test_addressing_is_for_managers_only_and_a_refusal_says_so(invoke, table):
    body = invoke(command("server", "addressing", answer_other_bots=True, permissions=NOT_MANAGER))

    assert_ephemeral_error(body, "Manage Server")
    assert body["data"]["embeds"][0]["title"] == "Not allowed"
    assert table.get(ItemKey(f"SERVER#{GUILD}", "CONFIG")) is None
