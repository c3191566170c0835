"""``/help``: in-Discord guides. ``/help overview`` (also a bare ``/help``) says what kioku is and
where to look next; ``stm``, ``memories`` and ``personas`` go deeper."""

from __future__ import annotations

from kioku.config import Settings
from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import message
from kioku.discord.ui import EMBED_COLOR_INFO
from kioku.domain.models import RenderMode, ServerConfig
from kioku.domain.stm.update_tool import PROMPT_MACROS
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.guild_admin import load_server_config

STM_GUIDE_DESCRIPTION = (
    "Short-term memory (STM) is what I keep about the **last while** in each channel: a running "
    "summary (or one block per category) plus the most recent raw messages. I also recall up to "
    "{other_channels} other channels of this server, so a conversation can move between channels "
    "without starting over."
)


def stm_guide_fields(settings: Settings, config: ServerConfig) -> tuple[tuple[str, str], ...]:
    """The STM guide with the values in force: the deployment's settings and this server's parameters."""
    stm = config.stm
    crude = stm.crude_message_count
    if crude is None:
        crude = settings.SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT
    content_depth = (
        "near the top"
        if stm.content_injection_depth < 0
        else f"{stm.content_injection_depth} turn{'' if stm.content_injection_depth == 1 else 's'} "
        "above the newest message"
    )
    prompt_macros = ", ".join(f"`{{{name}}}`" for name in PROMPT_MACROS)
    return (
        (
            "Summary or categories",
            "With no categories I keep one running summary per channel, of at most "
            f"{settings.SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH} characters. Admins can define up to "
            f"{settings.STM_MAX_CATEGORIES} categories (label + description, e.g. *Plans*, *Mood*); I then "
            "keep one block per category.\n`/server stm categories-edit`",
        ),
        (
            "Render mode",
            f"How **other** channels are shown to me (here: `{stm.render_mode.value}`):\n"
            f"• `{RenderMode.CRUDE_SUMMARY.value}`: the summary block, then the latest {crude} raw messages.\n"
            f"• `{RenderMode.SUPERSEDE.value}`: the summary block replaces the raw messages when one exists.\n"
            "The current channel always shows its live history either way.",
        ),
        (
            "Cadence",
            "Every turn I take in a channel adds 1 to its counter. Once it reaches the cadence "
            f"(here {stm.refresh_cadence}) I am reminded to refresh the summary, and reminded every turn "
            "until I do; writing the summary resets the counter.",
        ),
        (
            "Where it goes in my context",
            f"• Nudge depth (here {stm.nudge_injection_depth}): the reminder sits that many turns above "
            "the newest message.\n"
            f"• Content depth (here {stm.content_injection_depth}): the memory block sits {content_depth}; "
            "-1 keeps it near the top, 0 or more moves it that many turns above the newest message.\n"
            f"• While a channel is active (updated in the last {_duration(settings.STM_FRESH_WINDOW_MINUTES)}) "
            f"the block is pulled down to depth {settings.STM_FRESH_INJECTION_DEPTH} at most, so fresh "
            "memory reads as current; it never moves further away.",
        ),
        (
            "How long it lasts",
            f"Raw messages last {_duration(settings.SHORT_TERM_MEMORY_TTL_HOURS * 60)}; summaries and "
            f"categories stay until a channel has been quiet for {settings.STM_JANITOR_RETENTION_DAYS} days.",
        ),
        (
            "Parameters and prompts",
            "`/server stm parameters` sets cadence, render mode, raw-message count, nudge depth and "
            "content depth. `/server stm prompt-edit` replaces the tool description or the reminder text; "
            f"these are filled in: {prompt_macros}. An unknown `{{placeholder}}` loses its braces. In "
            "`/persona stm edit` the same are filled in, except `{bot}`, which stays and is read when the "
            "memory is shown (as does `{user}` in a DM: that memory is always about you).",
        ),
        (
            "Privacy",
            "A channel is private when @everyone cannot view it; private threads are private, other "
            "threads follow their channel. What is said in a private channel is recalled only in that "
            "channel and its threads, never in another channel of the server (managers can override a "
            "channel, or turn on the bypass, with `/server privacy`). Nothing is recalled in another "
            "server. Messages of members with privacy level **full** are not stored; recall of our DMs "
            "in a server is off unless you opt in with `/personal stm`. More: `docs/privacy.md`.",
        ),
        (
            "Turning it off, looking at it",
            "The **Short-Term Memory** capability (`/capabilities manage`) stops my automatic updates "
            "and reminders but keeps stored memory visible. `/persona stm view` shows this channel's "
            "memory to anyone; `/persona stm edit` lets managers rewrite it.",
        ),
    )


MEMORIES_GUIDE_DESCRIPTION = (
    "Long-term memories are facts I keep across conversations: about this server, or about one "
    "person. You decide what I keep about you; the server's managers decide what I keep about the server. "
    "I keep up to {server_limit} memories for a server and {personal_limit} about each person, each of "
    "at most {max_length} characters, and I am shown each one whole."
)

MEMORIES_GUIDE_FIELDS = (
    (
        "Your memories (everyone, also in DMs)",
        "`/personal memories list`: everything I remember about you (server memories that name you "
        "too), with who saved it, where (unless it is a channel you can't see) and when.\n"
        "`/personal memories forget memory_id:<id>`: forget one, whoever saved it.\n"
        "`/personal memories edit memory_id:<id> content:<text>`: correct one about you (or one about "
        "nobody that you wrote); `/personal memories history memory_id:<id>`: the texts it said before.\n"
        "`/personal memories forget-all`: forget everything about you (I ask first): memories, our "
        "DM's short-term memory and your messages in any channel's short-term memory. Memories you "
        "saved that are not about you stay, without your name.\n"
        "`/personal memories export`: all of it as a JSON file.\n"
        "`/personal stm`: your privacy level and cross-server memory.\n"
        "**Why this answer?** (a reply's Apps menu): which memories I was shown for that reply, as "
        "you may see them now; someone else's personal memories only counted.",
    ),
    (
        "Server memories (Manage Server)",
        "`/server memories list`: every memory kept for the whole server, with its id, status (active or "
        "pending review), author, channel and date; one said in a private channel shows its text only "
        "when the list is opened there or in one of its threads.\n"
        "`/server memories forget memory_id:<id>`: delete one server memory.\n"
        "`/server memories edit memory_id:<id> content:<text>`: correct one, its old text kept; "
        "`/server memories history memory_id:<id>`: the texts it said before.\n"
        "`/server memories moderation mode:open|approval`: **open** (the default) saves server memories at "
        "once; **approval** makes those saved in conversations with someone who does not manage the server "
        "wait for review: not recalled, but counted toward the limit.\n"
        "`/server memories review`: the memories awaiting review, oldest first, with **Approve** and "
        "**Reject** buttons.",
    ),
    (
        "Memory over time",
        "`/personal memories edit` and `/server memories edit` also take `expires_in_days:<1-3650>` "
        "(from now) or `clear_expiry:True`, with or without a new `content`; the history keeps the "
        "expiry it had. A memory that expires is never recalled after its day (the lists say `until "
        "<date>`), then deleted.\n"
        "`/personal memories list` and `/server memories list` take `order:recent` (newest first) or "
        "`order:least_used`: those I was never shown first, then the longest since I was shown them; "
        "those unused for 90 days are marked (turns in private channels are not counted, so the "
        "order never tells of them).",
    ),
    (
        "Writing memories yourself",
        "`/personal memories add content:<text>`: a memory about you, in your words (also in DMs); "
        "`all_personas:True` makes every persona of the server recall it (it counts in each one's "
        "limit).\n"
        "`/server memories add content:<text> [persona:<name>]` (Manage Server): a server memory of "
        "that persona (the main one by default), said in the channel you write it in, as private as it.\n"
        "**Remember this** (a message's Apps menu): your own message becomes a memory about you; "
        "someone else's, a server memory said in its channel (awaiting review where the server reviews "
        "members' memories), never a personal memory about them.\n"
        "`expires_in_days:<1-3650>` sets how long a memory you add holds. The same rules as mine apply: "
        'the length, the limits, "already remembered", privacy. I answer only to you, with the id.',
    ),
    (
        "Where memories are recalled",
        "What is said in a private channel stays in that channel and its threads; nothing crosses "
        "servers; what someone says about you is recalled only in the server where it was said. "
        "`/server privacy view` shows a server's channel overrides.",
    ),
)

OVERVIEW_DESCRIPTION = (
    "I am a chat bot with a memory. Mention me, reply to me, or call me by a trigger word, and I "
    "answer with what I remember of this channel, of this server and of you."
)

OVERVIEW_FIELDS = (
    (
        "What I remember",
        "• **Short-term**: the last while of each channel, as a running summary and the latest "
        "messages, so a conversation can pick up where it left off (`/help stm`).\n"
        "• **Long-term**: facts worth keeping, about the server or about one person, saved when "
        "someone asks me to remember something or I judge it worth it (`/help memories`).",
    ),
    (
        "Seeing and forgetting it",
        "`/personal memories list` shows what I keep about you and `/personal memories forget` or "
        "`forget-all` removes it; `/personal memories export` gives you all of it. On any of my "
        "replies, **Apps → Why this answer?** shows which memories I was shown for it.",
    ),
    (
        "Privacy",
        "What is said in a private channel stays there; nothing crosses servers. `/personal stm` sets "
        "your privacy level; managers have `/server privacy`.",
    ),
    (
        "Several voices",
        "A server can give me personas, each with its own name, personality and memories: call one by "
        "its name at the start of a message (`/help personas`).",
    ),
)

PERSONAS_GUIDE_DESCRIPTION = (
    "A server can have up to {max_personas} personas, the main one (me, under the bot's own name) "
    "included. The others speak through a webhook in the channel, under their own name and avatar."
)

PERSONAS_GUIDE_FIELDS = (
    (
        "Calling one",
        'Start a message with its name ("Luna, what do you think?"), use one of its trigger words, or '
        "reply to one of its messages. A mention of me or a reply to me is the main persona's, unless "
        'my mention opens with its name ("@kioku Luna, …"). Name several and each answers, in the '
        "order named. In an *always* channel (`/server addressing channel: mode:always persona:`) "
        "every message is answered, by that channel's persona. `/chat message: persona:` asks one "
        "directly.",
    ),
    (
        "What each one remembers",
        "Each persona keeps its own short-term memory of each channel, and the long-term memories of "
        "its lineage: its own, or another persona's when it was made to share them. Memories you "
        "keep for every persona are recalled by all of them. `/persona list` shows who shares what.",
    ),
    (
        "Managing them (Manage Server)",
        "`/persona add name: prompt:` makes one (`memories_from:` to share another's memories); "
        "`/persona edit`, `/persona view`; `/server addressing persona: trigger_words:`; "
        "`/persona nickname` sets what a persona calls someone; `/persona remove` asks first, saying "
        "what goes with it. Personas need kioku to have **Manage Webhooks** in the channel.",
    ),
)

GUIDES = {
    "overview": "What kioku is, and where to look next",
    "stm": "Short-term memory",
    "memories": "Long-term memories and your data",
    "personas": "Several personas on one server",
}


def stm_guide_embed(settings: Settings, config: ServerConfig) -> dict:
    fields = stm_guide_fields(settings, config)
    return {
        "title": "Short-term memory: what you can customise",
        "description": STM_GUIDE_DESCRIPTION.format(
            other_channels=settings.SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS
        ),
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": False} for name, value in fields],
    }


def memories_guide_embed(settings: Settings) -> dict:
    description = MEMORIES_GUIDE_DESCRIPTION.format(
        server_limit=settings.MAX_SERVER_MEMORIES,
        personal_limit=settings.MAX_PERSONAL_MEMORIES,
        max_length=settings.MAX_MEMORY_LENGTH,
    )
    return {
        "title": "Long-term memories: what I keep, and your control over it",
        "description": description,
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": False} for name, value in MEMORIES_GUIDE_FIELDS],
    }


def overview_embed() -> dict:
    return {
        "title": "kioku: a chat bot that remembers",
        "description": OVERVIEW_DESCRIPTION,
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": False} for name, value in OVERVIEW_FIELDS],
    }


def personas_guide_embed(settings: Settings) -> dict:
    return {
        "title": "Personas: several voices on one server",
        "description": PERSONAS_GUIDE_DESCRIPTION.format(max_personas=settings.MAX_PERSONAS_PER_SERVER),
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": False} for name, value in PERSONAS_GUIDE_FIELDS],
    }


def _duration(minutes: float) -> str:
    """``90`` → "90 minutes", ``120`` → "2 hours", ``1440`` → "24 hours"."""
    if minutes >= 60 and minutes % 60 == 0:
        hours = int(minutes // 60)
        return f"{hours} hour" + ("s" if hours != 1 else "")
    return f"{minutes:g} minute" + ("s" if minutes != 1 else "")


def on_help(interaction: Interaction, context: CommandContext) -> dict:
    topic = interaction.subcommand_path()[:1]
    settings = context.settings
    if topic == ("stm",):
        # the server's own parameters where there is a server; a DM shows the defaults
        config = load_server_config(interaction, context) if interaction.guild_id else ServerConfig()
        return message(embeds=[stm_guide_embed(settings, config)])
    if topic == ("memories",):
        return message(embeds=[memories_guide_embed(settings)])
    if topic == ("personas",):
        return message(embeds=[personas_guide_embed(settings)])
    if topic in ((), ("overview",)):  # Discord always sends a subcommand; the playground may not
        return message(embeds=[overview_embed()])
    topics = ", ".join(f"`/help {name}`" for name in GUIDES)
    raise Refused(Refusal.NOT_UNDERSTOOD, f"I have no guide on that yet. Try {topics}.")


COMMAND = Command(
    name="help",
    description="Guides to what kioku can do",
    options=[
        {"type": OptionType.SUB_COMMAND, "name": topic, "description": f"Guide: {title}"}
        for topic, title in GUIDES.items()
    ],
    on_command=on_help,
)
