"""``/help``: in-Discord guides. ``/help stm`` explains how short-term memory can be shaped."""

from __future__ import annotations

from kioku.services.commands.base import Command, Interaction
from kioku.services.commands.discord import EMBED_COLOR_INFO, OptionType, error_message, message

STM_GUIDE_DESCRIPTION = (
    "Short-term memory (STM) is what I keep about the **last while** in each channel: a running "
    "summary (or one block per category) plus the most recent raw messages. I also recall a few "
    "other channels of this server, so a conversation can move between channels without starting over."
)

STM_GUIDE_FIELDS = (
    (
        "Summary or categories",
        "With no categories I keep one running summary per channel. Admins can define up to 5 "
        "categories (label + description, e.g. *Plans*, *Mood*); I then keep one block per category.\n"
        "`/server stm categories-edit`",
    ),
    (
        "Render mode",
        "How **other** channels are shown to me:\n"
        "• `crude_summary` (default): the summary block, then the latest raw messages.\n"
        "• `supersede`: the summary block replaces the raw messages when one exists.\n"
        "The current channel always shows its live history either way.",
    ),
    (
        "Cadence",
        "Every turn I take in a channel adds 1 to its counter. Once it reaches the cadence "
        "(default 5) I am reminded to refresh the summary, and reminded every turn until I do; "
        "writing the summary resets the counter.",
    ),
    (
        "Where it goes in my context",
        "• Nudge depth (default 2): the reminder sits before the latest exchange.\n"
        "• Content depth (default -1): the memory block sits near the top; 0 or more moves it "
        "that many turns above the newest message.\n"
        "• While a channel is active (updated in the last hour) the block is pulled down to "
        "depth 2 at most, so fresh memory reads as current; it never moves further away.",
    ),
    (
        "Parameters and prompts",
        "`/server stm parameters` sets cadence, render mode, raw-message count, nudge depth and "
        "content depth. `/server stm prompt-edit` replaces the tool description or the reminder text "
        "(`{category_labels}`, `{user}` and `{bot}` are filled in; unknown `{placeholders}` are removed).",
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
    "person. You decide what I keep about you; the server's managers decide what I keep about the server."
)

MEMORIES_GUIDE_FIELDS = (
    (
        "Your memories (everyone, also in DMs)",
        "`/personal memories list`: what I remember about you, with who saved it, where and when.\n"
        "`/personal memories forget memory_id:<id>`: forget one, whoever saved it.\n"
        "`/personal memories forget-all`: forget everything about you (I ask first): memories, our "
        "DM's short-term memory and your messages in any channel's short-term memory.\n"
        "`/personal memories export`: all of it as a JSON file.\n"
        "`/personal stm`: your privacy level and cross-server memory.",
    ),
    (
        "Server memories (Manage Server)",
        "`/server memories list`: every memory kept for the whole server, with its id, status (active or "
        "pending review), author, channel and date; one said in a private channel shows its text only "
        "when the list is opened there or in one of its threads.\n"
        "`/server memories forget memory_id:<id>`: delete one server memory.\n"
        "`/server memories moderation mode:open|approval`: **open** (the default) saves server memories at "
        "once; **approval** makes those saved in conversations with someone who does not manage the server "
        "wait for review: not recalled, but counted toward the limit.\n"
        "`/server memories review`: the memories awaiting review, oldest first, with **Approve** and "
        "**Reject** buttons.",
    ),
    (
        "Where memories are recalled",
        "What is said in a private channel stays in that channel and its threads; nothing crosses "
        "servers; what someone says about you is recalled only in the server where it was said. "
        "`/server privacy view` shows a server's channel overrides.",
    ),
)

GUIDES = {"stm": "Short-term memory", "memories": "Long-term memories and your data"}


def stm_guide_embed() -> dict:
    return {
        "title": "Short-term memory: what you can customise",
        "description": STM_GUIDE_DESCRIPTION,
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": False} for name, value in STM_GUIDE_FIELDS],
    }


def memories_guide_embed() -> dict:
    return {
        "title": "Long-term memories: what I keep, and your control over it",
        "description": MEMORIES_GUIDE_DESCRIPTION,
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": False} for name, value in MEMORIES_GUIDE_FIELDS],
    }


def on_help(interaction: Interaction) -> dict:
    topic = interaction.subcommand_path()[:1]
    if topic == ("stm",):
        return message(embeds=[stm_guide_embed()])
    if topic == ("memories",):
        return message(embeds=[memories_guide_embed()])
    return error_message("I have no guide on that yet. Try `/help stm` or `/help memories`.")


COMMAND = Command(
    name="help",
    description="Guides to what kioku can do",
    options=[
        {"type": OptionType.SUB_COMMAND, "name": topic, "description": f"Guide: {title}"}
        for topic, title in GUIDES.items()
    ],
    on_command=on_help,
)
