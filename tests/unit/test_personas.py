"""Several personas on one server: creating one, who a message addresses, whose voice a message is."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kioku.domain.addressing import (
    MAIN_PERSONA_TURN,
    TurnReason,
    decide_turn,
    needs_server_config,
    parse_gateway_message,
)
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.personas import (
    name_opens,
    new_persona,
    persona_of_message,
    voiced_history,
    with_nickname,
    with_persona,
    without_persona,
)
from kioku.domain.settings_edit import InvalidSettingsEdit
from tests.unit.test_addressing import BOT_ID, CHANNEL_ID, GUILD_ID, WEBHOOK_ID, guild_message

LUNA_ID = "900000000000000009"
SOL_ID = "900000000000000010"


def server(**changes) -> ServerConfig:
    config = ServerConfig(guild_id=GUILD_ID, trigger_words=("kioku",))
    luna = new_persona(config, persona_id=LUNA_ID, name="Luna", prompt="You are Luna.")
    config = with_persona(config, replace(luna, trigger_words=("moon",)))
    sol = new_persona(config, persona_id=SOL_ID, name="Sol", prompt="", memories_from="Luna")
    config = with_persona(config, replace(sol, trigger_words=("sun",)))
    return replace(config, **changes)


def decide(content: str, config: ServerConfig, **overrides):
    event = parse_gateway_message({"t": "MESSAGE_CREATE", "d": guild_message(content, **overrides)})
    return decide_turn(event, bot_user_id=BOT_ID, config=config)


def webhook_post(name: str, message_id: str = "610000000000000006") -> dict:
    return guild_message(
        "an earlier answer",
        id=message_id,
        author={"id": WEBHOOK_ID, "username": name, "bot": True},
        webhook_id=WEBHOOK_ID,
        application_id=BOT_ID,
    )


# -- creating a persona --------------------------------------------------------------------------


def test_a_new_persona_starts_its_own_lineage_unless_it_shares_another_s():
    # Given a server with Luna (her own lineage) and Sol, created with memories_from Luna
    config = server()
    luna, sol = config.persona_named("luna"), config.persona_named("SOL")
    # Then Luna's lineage is new (not the main persona's), and Sol reads Luna's
    assert luna.alter and luna.lineage_id == int(LUNA_ID) != config.persona.lineage_id
    assert sol.lineage_id == luna.lineage_id
    assert config.lineage_sharers(luna) == (sol,)
    assert config.lineage_sharers(config.persona) == ()


@pytest.mark.parametrize(
    "changes, why",
    [
        ({"name": "luna"}, "already a persona called"),
        ({"name": "Kioku"}, "already a persona called"),
        ({"memories_from": "Nobody"}, "no persona called **Nobody**"),
        ({"avatar_url": "http://example.com/a.png"}, "https://"),
        ({"avatar_url": "javascript:alert(1)"}, "https://"),
        ({"name": "<@1>"}, "cannot contain"),
        ({"prompt": "x" * 4001}, "at most 4000"),
        ({"name": "Discord Helper"}, "Discord refuses webhook names"),
        ({"name": "my clyde"}, "Discord refuses webhook names"),
        ({"name": "Everyone"}, "Discord refuses webhook names"),
        ({"name": "I"}, "at least 3 characters"),
        ({"name": "Yes"}, "not a common word"),
        ({"name": "  THE  "}, "not a common word"),
    ],
)
def test_a_persona_that_cannot_be_created_says_why(changes, why):
    arguments = {"persona_id": "910000000000000009", "name": "Stella", "prompt": "", **changes}
    with pytest.raises(InvalidSettingsEdit, match=why.replace("*", r"\*").replace("(", r"\(")):
        new_persona(server(), **arguments)


def test_removing_a_persona_keeps_the_others_and_a_nickname_is_the_persona_s_own():
    config = server()
    luna = config.persona_named("Luna")
    called = with_nickname(luna, "200000000000000002", "  Captain   Alice ")
    config = with_persona(config, called)
    assert config.persona_named("Luna").nickname_of("200000000000000002") == "Captain Alice"
    assert config.persona_named("Sol").nickname_of("200000000000000002") is None
    assert [p.name for p in without_persona(config, luna).personas] == ["Kioku", "Sol"]


# -- who a message addresses ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, expected",
    [
        ("Luna, how are you?", (LUNA_ID,)),
        ("luna: hi", (LUNA_ID,)),
        ("the moon is bright", (LUNA_ID,)),
        ("sun and moon, both of you", (SOL_ID, LUNA_ID)),
        ("moon first, then the sun", (LUNA_ID, SOL_ID)),
        ("kioku and sun", (MAIN_PERSONA_TURN, SOL_ID)),
        ("Sol, ask kioku and the moon", (SOL_ID, MAIN_PERSONA_TURN, LUNA_ID)),
    ],
)
def test_each_persona_addressed_answers_in_the_order_named(content, expected):
    decision = decide(content, server())
    assert decision.answer and decision.personas == expected


@pytest.mark.parametrize("content", ["Lunatic behaviour", "hello there", "I said luna, to her"])
def test_a_name_inside_a_word_or_not_opening_the_message_addresses_nobody(content):
    decision = decide(content, server())
    assert not decision.answer and decision.reason is TurnReason.NOT_ADDRESSED


def test_a_reply_to_an_alter_persona_s_webhook_message_addresses_that_persona():
    decision = decide("what did you mean?", server(), type=19, referenced_message=webhook_post("Luna"))
    assert decision.answer and decision.personas == (LUNA_ID,)


def test_a_mention_of_the_bot_is_the_main_persona_s_turn_without_reading_the_personas():
    decision = decide(f"<@{BOT_ID}> hi", ServerConfig(guild_id=GUILD_ID))
    assert decision.answer and decision.reason is TurnReason.MENTIONED and decision.personas == ()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"<@{BOT_ID}> Luna, what do you think?", (LUNA_ID,)),
        (f"<@!{BOT_ID}>, sol: and you?", (SOL_ID,)),
        (f"<@{BOT_ID}> what does Luna think?", ()),
        (f"<@{BOT_ID}> Lunatic idea", ()),
        (f"<@{BOT_ID}> Luna is nice", ()),
        (f"Luna, ask <@{BOT_ID}>", (LUNA_ID,)),
    ],
)
def test_a_mention_and_an_alter_persona_s_name_opening_the_text_is_that_persona_s_turn(content, expected):
    decision = decide(content, server())
    assert decision.answer and decision.reason is TurnReason.MENTIONED
    assert decision.personas == expected


def test_an_always_channel_answers_members_unaddressed_as_its_persona_and_a_name_still_calls_another():
    config = server(always_channels={CHANNEL_ID: LUNA_ID})
    # a plain message is Luna's turn there; a mention too, unless it names another persona
    plain = decide("nice weather today", config)
    assert (plain.answer, plain.reason, plain.personas) == (True, TurnReason.ALWAYS_CHANNEL, (LUNA_ID,))
    assert decide(f"<@{BOT_ID}> hi", config).personas == ()  # a mention calls kioku itself
    assert decide(f"<@{BOT_ID}> Sol, hi", config).personas == (SOL_ID,)
    assert decide("Sol, and you?", config).personas == (SOL_ID,)
    # other bots and webhooks still need to call kioku, even when it answers other bots
    for bot_config in (config, replace(config, answer_other_bots=True)):
        robot = decide("beep", bot_config, author={"id": "300000000000000003", "username": "r", "bot": True})
        assert not robot.answer
    # another channel is not an always one; a removed persona's channel falls back to the main one
    assert not decide("hello", config, channel_id="500000000000000099").answer
    orphan = decide("hello", server(always_channels={CHANNEL_ID: "900000000000000077"}))
    assert orphan.answer and orphan.personas == ()
    main = decide("hello", ServerConfig(guild_id=GUILD_ID, always_channels={CHANNEL_ID: ""}))
    assert (main.answer, main.reason, main.personas) == (True, TurnReason.ALWAYS_CHANNEL, ())


@pytest.mark.parametrize(
    ("content", "reads"),
    [
        (f"<@{BOT_ID}> what are we doing this weekend?", False),
        (f"<@{BOT_ID}> could you help me with this, please?", False),
        (f"<@{BOT_ID}> Luna, what do you think?", True),
        (f"<@{BOT_ID}> Big Sol: hi", True),
        ("nice weather", True),
    ],
)
def test_the_relay_reads_the_configuration_only_where_it_could_change_the_answer(content, reads):
    event = parse_gateway_message({"t": "MESSAGE_CREATE", "d": guild_message(content)})
    decision = decide_turn(event, bot_user_id=BOT_ID, config=ServerConfig(guild_id=GUILD_ID))
    assert needs_server_config(event, decision) is reads


def test_kiokus_own_webhook_messages_are_never_answered_even_when_other_bots_are():
    # Given a server that answers other bots, and Luna's own message naming Sol and the moon
    config = server(answer_other_bots=True)
    message = webhook_post("Luna") | {"content": "Sol, look at the moon"}
    event = parse_gateway_message({"t": "MESSAGE_CREATE", "d": message})
    # Then it is kioku's own message
    decision = decide_turn(event, bot_user_id=BOT_ID, config=config)
    assert not decision.answer and decision.reason is TurnReason.OWN_MESSAGE
    # while another application's webhook naming Luna is answered (answer_other_bots)
    foreign = message | {
        "application_id": "990000000000000001",
        "author": {"id": "990000000000000002", "username": "x", "bot": True},
    }
    decision = decide_turn(
        parse_gateway_message({"t": "MESSAGE_CREATE", "d": foreign}), bot_user_id=BOT_ID, config=config
    )
    assert decision.answer and decision.personas == (SOL_ID, LUNA_ID)


def test_a_server_without_alter_personas_is_addressed_as_before():
    config = ServerConfig(guild_id=GUILD_ID, trigger_words=("kioku",))
    decision = decide("hey kioku", config)
    assert decision.answer and decision.reason is TurnReason.TRIGGER_WORD and decision.personas == ()


@pytest.mark.parametrize(
    "text, name, opens",
    [
        ("Luna", "Luna", True),
        ("LUNA!", "luna", True),
        ("Lunatic", "Luna", False),
        ("Mr Moon, hi", "mr  moon", True),
        ("So, what now?", "So", False),
        ("I think so", "I", False),
        ("Well, maybe", "Well", False),
        ("Sol, hi", "Sol", True),
        ("ルナ、元気?", "ルナ", True),
        ("ルナ", "ルナ", True),
        ("ルナマリア、こんにちは", "ルナ", False),
        ("月、きれい", "月", False),  # one ideograph: too short to call anyone
    ],
)
def test_a_name_opens_a_message_as_a_word(text, name, opens):
    assert name_opens(text, name) is opens


def test_a_persona_named_a_common_word_before_the_rule_is_called_by_its_trigger_words_only():
    # Given "So", an alter persona stored before such names were refused, with the trigger word "soso"
    so = Persona(
        persona_id="910000000000000009", lineage_id=9, name="So", alter=True, trigger_words=("soso",)
    )
    config = with_persona(server(), so)
    # Then an ordinary message opening with "So" calls nobody, and its trigger word still calls it
    assert not decide("So, what did everyone think?", config).answer
    assert decide("soso, hi", config).personas == (so.persona_id,)


# -- whose voice a message is ----------------------------------------------------------------------


def test_each_persona_hears_its_own_messages_as_its_own_and_the_others_as_other_bots():
    from kioku.discord.models import parse_message
    from kioku.domain.dialogue import read_dialogue
    from kioku.domain.turn_jobs import PersonaCue

    luna_said = parse_message(webhook_post("Luna", "610000000000000006"))
    sol_said = parse_message(webhook_post("Sol", "610000000000000007"))
    main_said = parse_message(
        guild_message(
            "hi", id="610000000000000008", author={"id": BOT_ID, "username": "kioku-bot", "bot": True}
        )
    )
    person_said = parse_message(guild_message("hello", id="610000000000000009"))
    history = [person_said, main_said, sol_said, luna_said]  # newest first
    as_luna = PersonaCue(LUNA_ID, int(LUNA_ID), "Luna")

    def heard(speaking, self_id, name):
        voiced = voiced_history(history, BOT_ID, speaking, "Kioku", WEBHOOK_ID)
        items = read_dialogue(
            voiced, bot_user_id=self_id, supports_vision=False, limit=10, bot_name=name
        ).items
        return [(item.role, str(item.content).split(" |")[0]) for item in items]

    # Luna: her own message is hers; Sol's and the main persona's are other bots'
    assert heard(as_luna, LUNA_ID, "Luna") == [
        ("assistant", "[Luna"),
        ("user", "[BOT Sol"),
        ("user", "[BOT Kioku"),
        ("user", "[Alice (alice)"),
    ]
    # the main persona: its own is its own, both alters are other bots (never people, never "you")
    assert heard(None, BOT_ID, "Kioku") == [
        ("user", "[BOT Luna"),
        ("user", "[BOT Sol"),
        ("assistant", "[Kioku"),
        ("user", "[Alice (alice)"),
    ]
    # a persona since removed is nobody's voice
    assert persona_of_message(parse_message(webhook_post("Gone")), BOT_ID, server()) is None


def test_a_persona_s_own_messages_are_those_under_its_name_through_the_webhook_kioku_keeps():
    from kioku.discord.models import parse_message
    from kioku.domain.turn_jobs import PersonaCue

    # Given Luna's answer through the channel's webhook, and a lookalike: "Luna" through another
    # webhook (one of the application's too, as an old webhook of kioku's would be)
    luna_said = parse_message(webhook_post("Luna", "610000000000000006"))
    lookalike = parse_message(
        webhook_post("Luna", "610000000000000007")
        | {"webhook_id": "700000000000000099", "author": {"id": "700000000000000099", "username": "Luna"}}
    )
    as_luna = PersonaCue(LUNA_ID, int(LUNA_ID), "Luna")
    # When Luna hears them, knowing the channel's webhook, and not knowing it
    known = voiced_history([lookalike, luna_said], BOT_ID, as_luna, "Kioku", WEBHOOK_ID)
    unknown = voiced_history([lookalike, luna_said], BOT_ID, as_luna, "Kioku", None)
    # Then only the post through kioku's webhook is hers; the lookalike is another bot named Luna
    assert [m.author.id for m in known] == ["700000000000000099", LUNA_ID]
    assert known[0].author.bot and known[0].webhook_id is None
    assert LUNA_ID not in {m.author.id for m in unknown}


def test_speaking_as_a_removed_persona_is_none_and_the_main_one_is_the_default():
    config = server()
    assert config.speaking_as("123") is None
    assert config.speaking_as(None).persona == config.persona
    luna_turn = config.speaking_as(LUNA_ID)
    assert luna_turn.persona.name == "Luna" and luna_turn.main_persona == config.persona
    assert {p.name for p in luna_turn.alters} == {"Kioku", "Sol"}


def test_the_main_persona_s_default_is_kioku():
    assert ServerConfig().main_persona == Persona()


# -- what a persona calls someone ------------------------------------------------------------------


def test_a_persona_s_nickname_finds_the_member_and_another_persona_s_does_not():
    from kioku.domain.ltm.targets import TargetKind, resolve_target
    from kioku.domain.system_prompt import system_prompt
    from tests.unit.ltm_fakes import BOB, make_turn, member_lookup, members

    # Given Luna, who calls Bob "Captain"
    turn = make_turn()
    luna = with_nickname(
        Persona(persona_id=LUNA_ID, lineage_id=9, name="Luna", alter=True), BOB.user_id, "Captain"
    )
    as_luna = replace(turn, config=replace(turn.config, persona=luna))
    # When a memory names "Captain" (or "Master Captain") in Luna's turn, and in the main persona's
    found = resolve_target("Captain", as_luna, members(None, member_lookup))
    affixed = resolve_target("Master Captain", as_luna, members(None, member_lookup))
    elsewhere = resolve_target("Captain", turn, members(None, member_lookup))
    # Then Luna's nickname finds Bob; the main persona knows nobody by it
    assert found.kind is affixed.kind is TargetKind.USER and found.user.user_id == BOB.user_id
    assert elsewhere.kind is TargetKind.NOT_FOUND
    # and Luna is told what she calls him
    assert f"(UserID:{BOB.user_id}): Captain" in system_prompt(as_luna)
    assert "You call these people" not in system_prompt(turn)


# -- an alter persona's delivery -------------------------------------------------------------------


class _Channel:
    """The slice of Discord a persona's delivery uses, in memory."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.created = 0

    def create_webhook(self, channel_id: str, name: str) -> dict:
        self.created += 1
        return {"id": WEBHOOK_ID, "token": "tok-en_1"}

    def execute_webhook(
        self, webhook_id, token, content, *, username, avatar_url=None, embeds=None, thread_id=None
    ):
        message = webhook_post(username, str(650000000000000000 + len(self.messages))) | {
            "content": content,
            "embeds": embeds or [],
        }
        self.messages.append(message)
        return message

    def get_channel_messages(self, channel_id, limit, *, before=None, after=None):
        from kioku.discord.models import parse_history

        return parse_history([m for m in self.messages if int(m["id"]) > int(after or 0)][::-1][:limit])


class _Store:
    def keep(self, guild_id, channel_id, webhook, *, replacing=None):
        return webhook


def test_a_redelivered_alter_persona_turn_counts_what_its_webhook_posted_and_posts_the_rest_once():
    from kioku.discord.models import parse_message
    from kioku.domain.turn import Outbox
    from kioku.domain.turn_jobs import TurnJob
    from kioku.services.persona_voice import PersonaReply, PersonaWebhooks
    from kioku.services.turn_delivery import Delivery

    # Given Luna's turn, whose first attempt posted the first chunk through the webhook and died
    channel = _Channel()
    job = TurnJob.from_message(parse_message(guild_message("moon, tell me", id="600000000000000100")))
    luna = server().persona_named("Luna")
    webhooks = PersonaWebhooks(channel, _Store())
    reply = PersonaReply(webhooks, job, luna, job.channel_id)
    outbox = Outbox(reply="one two", chunks=("one", "two"), notices=({"title": "Memory saved"},))
    first = Delivery(channel, job, reply)
    reply.post(0, "one")
    # and Sol said "two" in between (another voice of the same webhook)
    channel.execute_webhook(WEBHOOK_ID, "tok-en_1", "two", username="Sol")
    # When the redelivery adopts what the channel holds, then posts
    adopted = Delivery(channel, job, PersonaReply(webhooks, job, luna, job.channel_id)).adopt(outbox)
    done = first.post(adopted)
    # Then Luna's first chunk is hers already; Sol's "two" is not; the rest is posted once, as Luna
    assert adopted.reply_ids == (channel.messages[0]["id"],)
    assert [(m["author"]["username"], m["content"]) for m in channel.messages] == [
        ("Luna", "one"),
        ("Sol", "two"),
        ("Luna", "two"),
        ("Luna", ""),
    ]
    assert len(done.reply_ids) == 2 and len(done.notice_ids) == 1 and channel.created == 1


def test_a_redelivered_alter_persona_turn_does_not_count_another_webhook_s_post_under_its_name():
    from kioku.discord.models import parse_message
    from kioku.domain.personas import ChannelWebhook
    from kioku.domain.turn import Outbox
    from kioku.domain.turn_jobs import TurnJob
    from kioku.services.persona_voice import PersonaReply, PersonaWebhooks
    from kioku.services.turn_delivery import Delivery

    # Given Luna's turn, whose first attempt died before posting, and someone who then posted what
    # Luna would say, under her name, through another webhook
    channel = _Channel()
    job = TurnJob.from_message(parse_message(guild_message("moon, tell me", id="600000000000000100")))
    luna = server().persona_named("Luna")
    channel.messages.append(
        webhook_post("Luna", "650000000000000000")
        | {
            "content": "one",
            "webhook_id": "700000000000000099",
            "author": {"id": "700000000000000099", "username": "Luna"},
        }
    )
    # When the redelivery, knowing the channel's webhook as stored, adopts what the channel holds
    stored = ChannelWebhook(WEBHOOK_ID, "tok-en_1")
    reply = PersonaReply(PersonaWebhooks(channel, _Store()), job, luna, job.channel_id, stored=stored)
    adopted = Delivery(channel, job, reply).adopt(Outbox(reply="one", chunks=("one",)))
    # Then the lookalike is not Luna's post: hers is still to be made
    assert adopted.reply_ids == ()
