""" "Why this answer?": a message command (a message's Apps menu) on any of kioku's replies, answered
only to whoever asked, with what that turn's model was shown, as they may see it now.

The rule of what they see is ``kioku.domain.why.explain``; what it is checked against is read at the
time of the question (``kioku.services.why``), so a memory forgotten since reads "forgotten" and one
from a channel they can't see is not shown.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import THREAD_TYPES, CommandType
from kioku.discord.responses import message
from kioku.discord.snowflake import is_snowflake
from kioku.discord.ui import EMBED_COLOR_INFO, MAX_EMBED_FIELD_VALUE_CHARS, relative_time
from kioku.domain.forgetting import snowflake_time
from kioku.domain.ltm.memory import Memory, ScopeKind
from kioku.domain.ltm.wording import counted, for_people
from kioku.domain.privacy import Place, origin_known_to
from kioku.domain.stm.context import relative_age
from kioku.domain.text import one_line_name, shorten
from kioku.domain.why import Explanation, MemoryLine, MemoryUse, RowLine, TurnTrace, Visibility
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.registry import WHY_THIS_ANSWER
from kioku.services.why import why_this_answer

UNSEEN_MEMORY: Final = "a memory from a channel you can't see"
UNSEEN_CHANNEL: Final = "a channel you can't see"
NOT_A_REPLY: Final = (
    "I keep no record of what I was shown for that message: it is not one of my replies, or it is "
    "older than 16 days."
)
NOT_YET_A_REPLY: Final = (
    "I have no record of what I was shown for that message yet: if it is one of my replies, I am "
    "still finishing its turn. Ask again in a few minutes."
)
STILL_FINISHING: Final = timedelta(minutes=15)
"""How long after a message of kioku's its turn may still be committing: a worker that died between
its posts and its commit leaves them to the redelivery, after the queue's 12-minute visibility."""
MAX_MEMORY_CHARS: Final = 200
MAX_LINES: Final = 12
"""Lines a field lists before it says how many more: an answer stays within Discord's 6,000 characters."""
_USES: Final = {
    MemoryUse.RECALLED: "recalled",
    MemoryUse.SAVED: "saved in this turn",
    MemoryUse.UPDATED: "rewritten in this turn",
    MemoryUse.DELETED: "forgotten in this turn",
    MemoryUse.FOUND: "found by a search",
}


def on_why(interaction: Interaction, context: CommandContext) -> dict:
    target = interaction.data.get("target_id")
    invoker = interaction.invoker
    if (
        not isinstance(target, str)
        or not is_snowflake(target)
        or invoker is None
        or not interaction.channel_id
    ):
        raise Refused(Refusal.NOT_UNDERSTOOD, "Use it from a message's Apps menu, on one of my replies.")
    if interaction.guild_id is None and not interaction.in_bot_dm:
        raise Refused(Refusal.NOT_ALLOWED, NOT_A_REPLY)
    place = _place(interaction)
    answered = why_this_answer(
        target,
        invoker.id,
        place,
        traces=context.turn_ledger.traces,
        config_store=context.config_store,
        ltm_store=context.ltm_store,
        stm_store=context.stm_store,
    )
    if answered is None:
        return message(_no_record(interaction, context))
    return message(
        embeds=[_embed(answered.trace, answered.explanation, invoker.id, place, answered.persona_name)]
    )


def _no_record(interaction: Interaction, context: CommandContext) -> str:
    """Why no trace is shown: a message of kioku's posted minutes ago may be a reply whose turn is
    still committing (its record and reply pointers are written last), not a message of no turn."""
    said = interaction.target_message()
    bot = context.settings.DISCORD_APPLICATION_ID
    if said is None or bot not in (said.author.id, said.application_id):
        return NOT_A_REPLY
    recent = context.clock() - snowflake_time(said.id) < STILL_FINISHING
    return NOT_YET_A_REPLY if recent else NOT_A_REPLY


def _place(interaction: Interaction) -> Place:
    channel = interaction.channel
    thread_parent = channel.parent_id if channel is not None and channel.type in THREAD_TYPES else None
    return Place(interaction.guild_id, interaction.channel_id or "", thread_parent)


def _embed(trace: TurnTrace, shown: Explanation, viewer_id: str, place: Place, bot: str) -> dict[str, Any]:
    fields = [
        {"name": "Long-term memories", "value": _field(_memory_lines(shown, viewer_id, place, bot))},
        {"name": "Short-term memory", "value": _field(_row_lines(trace, shown))},
    ]
    return {
        "title": WHY_THIS_ANSWER,
        "color": EMBED_COLOR_INFO,
        "description": (
            f"What I was shown for this answer ({relative_time(trace.at)}), as you may see it now. "
            "Only you see this."
        ),
        "fields": fields,
    }


def _memory_lines(shown: Explanation, viewer_id: str, place: Place, bot: str) -> list[str]:
    lines = [_memory_line(line, viewer_id, place, bot) for line in shown.memories]
    if shown.others_memories:
        lines.append(
            f"{counted(shown.others_memories, 'memory', 'memories')} about someone else "
            "(theirs to see, not shown to you)"
        )
    if shown.unnoted:
        lines.append(
            f"{counted(shown.unnoted, 'memory', 'memories')} about more people than I keep track of "
            "(not kept)"
        )
    if shown.left_out:
        lines.append(f"{counted(shown.left_out, 'memory', 'memories')} left out: more than fitted the budget")
    return lines or ["none"]


def _memory_line(line: MemoryLine, viewer_id: str, place: Place, bot: str) -> str:
    use = _USES[line.use]
    if line.visibility is Visibility.FORGOTTEN:
        return f"#{line.memory_id} · {use} · forgotten since"
    memory = line.memory
    if (
        line.visibility is not Visibility.SHOWN
        or memory is None
        or not _origin_known(memory, viewer_id, place)
    ):
        # the privacy bypass lets a turn use a memory of a channel the viewer may not see; it does
        # not make this listing hand its words (or the channel's name) to them
        return f"#{line.memory_id} · {use} · {UNSEEN_MEMORY}"
    whose = (
        "about you"
        if memory.about == viewer_id
        else ("server memory" if memory.scope.kind is ScopeKind.SERVER else "personal")
    )
    # someone else's memory names them as Discord shows them to the viewer (a mention in an embed
    # pings no one), never "you"
    subject = f"<@{memory.about}>" if memory.about else "someone"
    text = for_people(memory.content, about_you=memory.about == viewer_id, name=subject, bot=bot)
    said = f"said {_where(memory, viewer_id, place)}"
    if line.changed_since:  # the turn was shown an earlier text: only the current one is shown here
        return f"#{memory.memory_id} · {use} · {whose}, {said} · changed since, it now says: {shorten(text, MAX_MEMORY_CHARS)}"
    return f"#{memory.memory_id} · {use} · {whose}, {said}: {shorten(text, MAX_MEMORY_CHARS)}"


def _origin_known(memory: Memory, viewer_id: str, place: Place) -> bool:
    return origin_known_to(memory.origin, person_id=viewer_id, author_id=memory.author_id, place=place)


def _where(memory: Memory, viewer_id: str, place: Place) -> str:
    origin = memory.origin
    return "in our DM" if origin.guild_id is None else f"in <#{origin.channel_id}>"


def _row_lines(trace: TurnTrace, shown: Explanation) -> list[str]:
    return [_row_line(trace, line) for line in shown.rows] or ["none"]


def _row_line(trace: TurnTrace, line: RowLine) -> str:
    used, entry = line.used, line.entry
    parts = " and ".join(
        part for part, on in (("summary", used.summary), ("categories", used.categories)) if on
    )
    what = parts or "recent messages"
    age = f", updated {relative_age(used.last_updated, trace.at)} at the time" if used.last_updated else ""
    if line.visibility is Visibility.GONE:
        return f"{'this channel' if used.current else 'another channel'}: no longer kept"
    if line.visibility is not Visibility.SHOWN or entry is None:
        return f"{UNSEEN_CHANNEL}"
    if used.current:
        where = "this channel"
    elif used.address.is_dm:
        where = "our direct messages"
    elif entry.private is not False:
        where = UNSEEN_CHANNEL  # recalled by the bypass: not named to someone who may not see it
    elif entry.channel_name:
        where = f"#{one_line_name(entry.channel_name)}"
    else:
        where = f"<#{entry.channel_id}>"
    return f"{where}: {what}{age}"


def _field(lines: list[str]) -> str:
    shown = lines[:MAX_LINES]
    if len(lines) > MAX_LINES:
        shown.append(f"… and {len(lines) - MAX_LINES} more")
    return shorten("\n".join(shown), MAX_EMBED_FIELD_VALUE_CHARS)


COMMAND = Command(name=WHY_THIS_ANSWER, description="", on_command=on_why, kind=CommandType.MESSAGE)
