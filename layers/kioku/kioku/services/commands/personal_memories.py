"""``/personal memories list|forget|forget-all|export``: what kioku keeps about you, under your control.

Every answer is ephemeral: only the person who asked sees it. Buttons name the person they belong to
in their custom_id and are refused to anyone else, so a copied button cannot act for someone else.
"""

from __future__ import annotations

import re
from typing import Any, Final

from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import THREAD_TYPES, MessageFlag, OptionType
from kioku.discord.responses import message, updated_message
from kioku.domain.ltm.memory import Memory, MemoryStatus, ScopeKind
from kioku.domain.privacy import Place, origin_known_to
from kioku.domain.text import shorten
from kioku.services import warm
from kioku.services.commands.base import Interaction
from kioku.services.commands.components import Button, ButtonStyle, action_rows
from kioku.services.commands.discord import EMBED_COLOR_ERROR, EMBED_COLOR_INFO, error_message, relative_time

GROUP: Final = "memories"
LIST, FORGET, FORGET_ALL, EXPORT = "list", "forget", "forget-all", "export"
MEMORY_ID_OPTION: Final = "memory_id"
PAGE_SIZE: Final = 5
MAX_SHOWN_CHARS: Final = 900
"""Five memories of this length, with their headers, stay under Discord's 6,000-character embed total."""
MAX_MEMORY_ID: Final = 10**12

_LIST_PAGE = re.compile(r"personal:list:(?P<user>[0-9]{1,20}):(?P<page>[0-9]{1,4})", re.ASCII)
_FORGET_ALL = re.compile(r"personal:forget-all:(?P<choice>confirm|cancel):(?P<user>[0-9]{1,20})", re.ASCII)

NOT_YOURS: Final = "These buttons belong to someone else's request."
NO_SUCH_MEMORY: Final = "I keep no memory #{id} about you."


def list_memories(interaction: Interaction) -> dict:
    embed, buttons = _list_page(interaction, 0)
    return message(embeds=[embed], components=buttons)


def _list_page(interaction: Interaction, page: int) -> tuple[dict, list[dict]]:
    """One page of the list (the last when ``page`` is past it) and its Previous/Next buttons."""
    from kioku.services.personal_memories import memories_about

    user_id = _invoker_id(interaction)
    memories = memories_about(user_id, warm.ltm_store())
    place = _place(interaction)
    pages = max(1, -(-len(memories) // PAGE_SIZE))
    page = min(max(page, 0), pages - 1)
    shown = memories[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
    embed = {
        "title": "What I remember about you",
        "color": EMBED_COLOR_INFO,
        "description": (
            "Nothing here."
            if not memories
            else f"{len(memories)} memories · page {page + 1} of {pages}. "
            "`/personal memories forget memory_id:<id>` forgets one."
        ),
        "fields": [_memory_field(memory, user_id, place) for memory in shown],
    }
    buttons = []
    if pages > 1:
        buttons = action_rows(
            [
                [
                    Button(f"personal:list:{user_id}:{page - 1}", "Previous", disabled=page == 0),
                    Button(f"personal:list:{user_id}:{page + 1}", "Next", disabled=page >= pages - 1),
                ]
            ]
        )
    return embed, buttons


def forget(interaction: Interaction) -> dict:
    user_id = _invoker_id(interaction)
    raw = interaction.option_values().get(MEMORY_ID_OPTION)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 < raw < MAX_MEMORY_ID:
        return error_message("`memory_id` is the number shown as #12345 in `/personal memories list`.")
    from kioku.services.personal_memories import forget_one

    forgotten = forget_one(user_id, str(raw), warm.ltm_store())
    if forgotten is None:
        return error_message(NO_SUCH_MEMORY.format(id=raw))
    return message(f"Forgotten: memory #{forgotten.memory_id}.")


def ask_to_forget_everything(interaction: Interaction) -> dict:
    user_id = _invoker_id(interaction)
    embed = {
        "title": "Forget everything about you?",
        "color": EMBED_COLOR_ERROR,
        "description": (
            "This deletes every long-term memory about you (whoever saved it, in every server and "
            "persona, server memories that name you too), our DM's short-term memory, and every "
            "message of yours I keep in any channel's short-term memory. It cannot be undone. "
            "Server memories you saved that do not name you stay for their server, without your name. "
            "Summaries I wrote of whole conversations stay; a server's managers can rewrite them with "
            "`/persona stm edit`."
        ),
    }
    buttons = action_rows(
        [
            [
                Button(
                    f"personal:forget-all:confirm:{user_id}", "Forget everything", style=ButtonStyle.DANGER
                ),
                Button(f"personal:forget-all:cancel:{user_id}", "Cancel"),
            ]
        ]
    )
    return message(embeds=[embed], components=buttons)


def export(interaction: Interaction) -> dict:
    """Answers "thinking…" and queues the export; the worker attaches the file to that answer."""
    from kioku.adapters.turn_queue import QueueUnavailable
    from kioku.discord.models import parse_user
    from kioku.domain.turn_jobs import TurnJob, TurnSource

    invoker = interaction.invoker
    if invoker is None or interaction.channel_id is None:
        return error_message("I could not tell who is asking.")
    job = TurnJob(
        source=TurnSource.EXPORT,
        turn_id=interaction.id,
        channel_id=interaction.channel_id,
        guild_id=interaction.guild_id,
        author=parse_user(invoker.model_dump()),
        content="",
        interaction_token=interaction.token,
        application_id=interaction.application_id,
    )
    try:
        warm.turn_queue().enqueue(job)
    except QueueUnavailable:
        return error_message("I could not start the export right now. Please try again in a moment.")
    return {
        "type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE,
        "data": {"flags": MessageFlag.EPHEMERAL},
    }


SUBCOMMANDS: Final = {
    (GROUP, LIST): list_memories,
    (GROUP, FORGET): forget,
    (GROUP, FORGET_ALL): ask_to_forget_everything,
    (GROUP, EXPORT): export,
}


def on_component(interaction: Interaction) -> dict:
    """Page buttons of the list, and the forget-all confirmation."""
    custom_id = interaction.custom_id
    clicker = _invoker_id(interaction)
    if page := _LIST_PAGE.fullmatch(custom_id):
        if page["user"] != clicker:
            return error_message(NOT_YOURS)
        embed, buttons = _list_page(interaction, int(page["page"]))
        return updated_message(embeds=[embed], components=buttons)
    if choice := _FORGET_ALL.fullmatch(custom_id):
        if choice["user"] != clicker:
            return error_message(NOT_YOURS)
        if choice["choice"] == "cancel":
            return updated_message(embeds=[{"title": "Nothing was forgotten.", "color": EMBED_COLOR_INFO}])
        return _forget_everything(clicker)
    return error_message("This button is from an older version of me. Run the command again.")


def _forget_everything(user_id: str) -> dict:
    from kioku.services.personal_memories import forget_everything

    report = forget_everything(user_id, warm.ltm_store(), warm.stm_store(), ledger=warm.turn_ledger())
    if report.nothing:
        description = "There was nothing left to forget."
    else:
        description = (
            f"Forgotten: {report.memories} long-term memories about you, {report.dm_rows} DM short-term "
            f"memories, and {report.lines} of your messages in channels' short-term memory. "
            f"{report.unnamed} server memories you saved that do not name you stay, without your name."
        )
    return updated_message(embeds=[{"title": "Done", "description": description, "color": EMBED_COLOR_INFO}])


def _place(interaction: Interaction) -> Place:
    channel = interaction.channel
    thread_parent = channel.parent_id if channel is not None and channel.type in THREAD_TYPES else None
    return Place(interaction.guild_id, interaction.channel_id or "", thread_parent)


def _memory_field(memory: Memory, user_id: str, place: Place) -> dict[str, Any]:
    from kioku.services.personal_memories import UNSEEN_CHANNEL

    origin = memory.origin
    if origin.channel_id is None:
        where = "somewhere I did not record"
    elif not origin_known_to(origin, person_id=user_id, author_id=memory.author_id, place=place):
        where = f"in {UNSEEN_CHANNEL}"
    elif origin.guild_id is None:
        where = "in our DM"
    else:
        where = f"in <#{origin.channel_id}>"
    if memory.author_id == user_id:
        who = "you"
    else:
        who = f"<@{memory.author_id}>" if memory.author_id else "someone"
    kind = " · server memory" if memory.scope.kind is ScopeKind.SERVER else ""
    if memory.status is MemoryStatus.PENDING:
        kind += ", awaiting review"
    text = shorten(memory.content.replace("{user}", "you").replace("{bot}", "me"), MAX_SHOWN_CHARS)
    return {
        "name": f"#{memory.memory_id}{kind} · saved by {who} {where}, {relative_time(memory.created_at)}",
        "value": text,
    }


def _invoker_id(interaction: Interaction) -> str:
    invoker = interaction.invoker
    return invoker.id if invoker is not None else ""


OPTIONS: Final = {
    "type": OptionType.SUB_COMMAND_GROUP,
    "name": GROUP,
    "description": "What I remember about you: see it, export it, forget it",
    "options": [
        {"type": OptionType.SUB_COMMAND, "name": LIST, "description": "The long-term memories about you"},
        {
            "type": OptionType.SUB_COMMAND,
            "name": FORGET,
            "description": "Forget one memory about you, whoever saved it",
            "options": [
                {
                    "type": OptionType.INTEGER,
                    "name": MEMORY_ID_OPTION,
                    "description": "The number shown as #12345 in /personal memories list",
                    "required": True,
                    "min_value": 1,
                }
            ],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": FORGET_ALL,
            "description": "Forget everything about you (asks first)",
        },
        {"type": OptionType.SUB_COMMAND, "name": EXPORT, "description": "Your memories as a JSON file"},
    ],
}
