"""``/server memories …``: a manager's curation of the memories kioku keeps for the whole server.

``list`` pages through every server memory of this server (every persona lineage), ``forget``
deletes one by id, ``edit`` corrects one (its old text kept as its history, which ``history`` shows), ``moderation`` chooses whether members' new server memories wait for a manager's
review, and ``review`` shows the waiting ones, oldest first, with Approve and Reject buttons.

A memory's text is shown only where ``kioku.domain.ltm.curation`` allows it; elsewhere its id,
author, channel and status still are. Every button carries what it acts on in its custom_id (a
review button also the random tag the memory had when shown, never anything computed from its text),
so a stale or repeated click changes nothing: the store's writes are conditional on the memory still
being what was shown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import ButtonStyle, OptionType, Permission
from kioku.discord.responses import message, updated_message
from kioku.discord.ui import EMBED_COLOR_INFO, Button, action_rows, relative_time
from kioku.domain.ltm.curation import text_shown_to_manager
from kioku.domain.ltm.memory import REVIEW_TAG_CHARS, Memory, MemoryNotFound, MemoryStatus, ScopeKind
from kioku.domain.ltm.usage import ListOrder, in_order
from kioku.domain.ltm.wording import counted, until_text
from kioku.domain.models import MemoryModeration, Persona, ServerConfig
from kioku.domain.privacy import Place, PrivacyPolicy
from kioku.domain.settings_edit import InvalidSettingsEdit
from kioku.domain.text import expand_macros, shorten
from kioku.services import memory_control, memory_edits
from kioku.services.commands import memory_add, memory_history, memory_order
from kioku.services.commands.base import CustomIdHandler, Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId, digits, hexadecimal, number, one_of
from kioku.services.commands.guild_admin import load_server_config, manages_server
from kioku.services.commands.memory_choices import id_choices

GROUP: Final = "memories"
LIST: Final = "list"
FORGET: Final = "forget"
MODERATION: Final = "moderation"
REVIEW: Final = "review"
MEMORY_ID_OPTION: Final = "memory_id"
MODE_OPTION: Final = "mode"
APPROVE: Final = "approve"
REJECT: Final = "reject"

PAGE_SIZE: Final = 5
"""Memories per list page or review message: five fields of at most ~1,050 characters stay under
Discord's 6,000 characters of embeds per message, and a message holds at most five action rows."""
MAX_SHOWN_CHARS: Final = 900
"""What a field shows of a memory's text; with the provenance line it stays under 1,024 characters."""
MAX_MEMORY_ID_DIGITS: Final = 20

PAGE_BUTTON: Final = CustomId("server", GROUP, "page", number("page", 6))
ORDERED_PAGE_BUTTON: Final = CustomId("server", GROUP, "page", memory_order.ORDER_FIELD, number("page", 6))
REVIEW_BUTTON: Final = CustomId(
    "server",
    GROUP,
    one_of("verdict", APPROVE, REJECT),
    digits("memory_id", MAX_MEMORY_ID_DIGITS),
    hexadecimal("tag", REVIEW_TAG_CHARS),
)

STATUS_NAMES: Final = {MemoryStatus.ACTIVE: "active", MemoryStatus.PENDING: "pending review"}
HIDDEN_PRIVATE: Final = "*Said in a private channel: open {what} there to read it.*"
HIDDEN_LEGACY: Final = (
    "*Saved before kioku recorded where memories were said, so only an Administrator can read it.*"
)
BAD_MEMORY_ID: Final = "`memory_id` must be a memory's number, as `/server memories list` shows it"
MODERATION_MEANING: Final = {
    MemoryModeration.OPEN: (
        "**Open**: server memories are saved as soon as a conversation asks for them (the default). "
        "Memories already awaiting review still wait for `/server memories review`."
    ),
    MemoryModeration.APPROVAL: (
        "**Approval**: a server memory saved in a conversation with someone who does not manage the "
        "server waits for a manager's review (`/server memories review`); until then kioku does not "
        "recall it. It counts toward the server's memory limit meanwhile."
    ),
}


@dataclass(frozen=True, slots=True)
class _Viewer:
    """Where a manager looks at the memories from, and what decides which texts they may read."""

    place: Place
    policy: PrivacyPolicy
    sees_every_channel: bool
    config: ServerConfig


def _viewer(interaction: Interaction, context: CommandContext) -> _Viewer:
    config = load_server_config(interaction, context)
    channel = interaction.channel
    parent = channel.parent_id if channel is not None and channel.id == interaction.channel_id else None
    # the manager check passed: an interaction's member carries its permissions
    permissions = (interaction.member.permissions if interaction.member else None) or 0
    return _Viewer(
        place=Place(interaction.guild_id, interaction.channel_id or "", parent),
        policy=config.privacy,
        sees_every_channel=bool(permissions & Permission.ADMINISTRATOR),
        config=config,
    )


# -- showing memories --------------------------------------------------------------------------------


def _memory_field(memory: Memory, viewer: _Viewer, opened_with: str, unused: str = "") -> dict[str, Any]:
    name = f"#{memory.memory_id} · {STATUS_NAMES[memory.status]}{until_text(memory.expires_at)}{unused}"
    if memory.scope.lineage != viewer.config.persona.lineage_id:
        readers = _lineage_readers(viewer.config, memory.scope.lineage)
        name += f" · {' and '.join(p.name for p in readers)}'s" if readers else " · an earlier persona's"
    value = f"{_text(memory, viewer, opened_with)}\n-# {_provenance(memory)}"
    return {"name": name, "value": value, "inline": False}


def _lineage_readers(config: ServerConfig, lineage: int) -> list[Persona]:
    """The personas that recall a lineage's memories (none: a removed persona's)."""
    return [p for p in config.personas if p.lineage_id == lineage]


def _text(memory: Memory, viewer: _Viewer, opened_with: str) -> str:
    if text_shown_to_manager(
        memory, viewer.place, viewer.policy, sees_every_channel=viewer.sees_every_channel
    ):
        readers = _lineage_readers(viewer.config, memory.scope.lineage) or [viewer.config.persona]
        return shorten(expand_macros(memory.content, {"bot": readers[0].name}), MAX_SHOWN_CHARS)
    if memory.origin.channel_id is None:
        return HIDDEN_LEGACY
    return HIDDEN_PRIVATE.format(what=opened_with)


def _provenance(memory: Memory) -> str:
    channel = f"<#{memory.origin.channel_id}>" if memory.origin.channel_id else "an unknown channel"
    author = f"<@{memory.author_id}>" if memory.author_id else "someone who asked to be forgotten"
    return f"by {author} in {channel} · saved {relative_time(memory.created_at)}"


def memory_choices(interaction: Interaction, context: CommandContext) -> list[dict[str, Any]]:
    """While a manager types ``memory_id``: the server's memories, each text shown only where the
    list would show it (a private channel's, there)."""
    focused = interaction.focused_option()
    if focused is None or focused[0] != MEMORY_ID_OPTION or not manages_server(interaction):
        return []
    viewer = _viewer(interaction, context)
    memories = memory_control.server_memories(str(interaction.guild_id), context.ltm_store)
    return id_choices(focused[1], [(m.memory_id, _text(m, viewer, "the list")) for m in memories])


# -- /server memories list ---------------------------------------------------------------------------


def list_memories(interaction: Interaction, context: CommandContext) -> dict:
    embed, buttons = _list_page(interaction, context, 0, memory_order.order_of(interaction))
    return message(embeds=[embed], components=buttons)


def show_page(interaction: Interaction, context: CommandContext, page: int) -> dict:
    embed, buttons = _list_page(interaction, context, page)
    return updated_message(embeds=[embed], components=buttons)


def show_ordered_page(interaction: Interaction, context: CommandContext, order: str, page: int) -> dict:
    embed, buttons = _list_page(interaction, context, page, ListOrder(order))
    return updated_message(embeds=[embed], components=buttons)


def _list_page(
    interaction: Interaction, context: CommandContext, page: int, order: ListOrder | None = None
) -> tuple[dict, list[dict]]:
    """Page ``page`` of the server's memories in ``order`` (past the end: the last page)."""
    viewer = _viewer(interaction, context)
    memories = in_order(memory_control.server_memories(str(interaction.guild_id), context.ltm_store), order)
    pages = max(1, -(-len(memories) // PAGE_SIZE))
    page = min(page, pages - 1)
    shown = memories[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
    pending = sum(memory.status is MemoryStatus.PENDING for memory in memories)
    embed: dict[str, Any] = {"title": "Server memories", "color": EMBED_COLOR_INFO}
    if not memories:
        embed["description"] = "No server memories yet." + _removed_by_subjects(interaction, context)
        return embed, []
    embed["description"] = (
        f"{len(memories)} kept for this server ({pending} awaiting review), "
        f"{memory_order.ORDER_NAMES[order]}. "
        "Forget one with `/server memories forget`." + _removed_by_subjects(interaction, context)
    )
    now = context.clock()
    embed["fields"] = [
        _memory_field(memory, viewer, "the list", memory_order.unused_text(memory, order, now))
        for memory in shown
    ]
    embed["footer"] = {"text": f"Page {page + 1} of {pages}"}
    return embed, _page_buttons(page, pages, order)


def _removed_by_subjects(interaction: Interaction, context: CommandContext) -> str:
    """How many memories the people they were about removed lately: a count only, never which
    memories (managers saw whom each was about, so an id would name who asked to erase it)."""
    removed = context.ltm_store.removed_by_subjects(str(interaction.guild_id), context.clock())
    if not removed:
        return ""
    return (
        f"\n{counted(removed, 'memory was', 'memories were')} removed in the last 30 days by the "
        "person they were about."
    )


def _page_buttons(page: int, pages: int, order: ListOrder | None = None) -> list[dict]:
    if pages == 1:
        return []

    def to(number: int) -> str:
        if order is None:
            return PAGE_BUTTON.encode(number)
        return ORDERED_PAGE_BUTTON.encode(order.value, number)

    return action_rows(
        [
            [
                Button(to(max(page - 1, 0)), "Previous", disabled=page == 0),
                Button(to(page + 1), "Next", disabled=page == pages - 1),
            ]
        ]
    )


# -- /server memories forget -------------------------------------------------------------------------


def forget(interaction: Interaction, context: CommandContext) -> dict:
    memory_id = _memory_id(interaction.option_values().get(MEMORY_ID_OPTION))
    memory = memory_control.forget_server_memory(str(interaction.guild_id), memory_id, context.ltm_store)
    embed = {
        "title": f"Forgot server memory #{memory_id}",
        "color": EMBED_COLOR_INFO,
        "fields": [_memory_field(memory, _viewer(interaction, context), "the list")],
    }
    return message(embeds=[embed])


def _memory_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 10**MAX_MEMORY_ID_DIGITS:
        raise MemoryNotFound(BAD_MEMORY_ID)
    return str(value)


# -- /server memories edit|history ------------------------------------------------------------------


def edit(interaction: Interaction, context: CommandContext) -> dict:
    text, expiry = memory_history.edit_of(interaction, context.clock())
    memory, viewer = _readable(interaction, context, "edit it")
    invoker = interaction.invoker
    edited = memory_edits.edit(
        memory,
        text,
        editor_id=invoker.id if invoker else "",
        editor_name=(invoker.global_name or invoker.username) if invoker else "someone",
        now=context.clock(),
        max_length=context.settings.MAX_MEMORY_LENGTH,
        store=context.ltm_store,
        policy=viewer.policy,
        expiry=expiry,
    )
    return message(embeds=[memory_history.edited_embed(edited, _render(viewer))])


def history(interaction: Interaction, context: CommandContext) -> dict:
    memory, viewer = _readable(interaction, context, "see its history")
    return message(embeds=[memory_history.history_embed(memory, _render(viewer))])


def _readable(interaction: Interaction, context: CommandContext, to: str) -> tuple[Memory, _Viewer]:
    """The server memory the command names, if the manager may read its text here (else no edit,
    no history: both would show or replace what they may not read)."""
    memory_id = _memory_id(interaction.option_values().get(MEMORY_ID_OPTION))
    memory = context.ltm_store.find(ScopeKind.SERVER, str(interaction.guild_id), memory_id)
    if memory is None:
        raise MemoryNotFound(f"there is no server memory #{memory_id} here")
    viewer = _viewer(interaction, context)
    if not text_shown_to_manager(
        memory, viewer.place, viewer.policy, sees_every_channel=viewer.sees_every_channel
    ):
        raise MemoryNotFound(
            f"server memory #{memory_id} was said in a channel you may not read here: {to} from that channel"
        )
    return memory, viewer


def _render(viewer: _Viewer) -> memory_history.Render:
    return lambda text: expand_macros(text, {"bot": viewer.config.persona.name})


# -- /server memories moderation ---------------------------------------------------------------------


def set_moderation(interaction: Interaction, context: CommandContext) -> dict:
    try:
        mode = MemoryModeration(str(interaction.option_values().get(MODE_OPTION)))
    except ValueError:
        raise InvalidSettingsEdit(["mode must be open or approval"]) from None
    config = load_server_config(interaction, context)
    saved = context.config_store.save_server_config(replace(config, memory_moderation=mode))
    embed = {
        "title": f"Saved: memory moderation is {saved.memory_moderation.value}",
        "description": MODERATION_MEANING[saved.memory_moderation],
        "color": EMBED_COLOR_INFO,
    }
    return message(embeds=[embed])


# -- /server memories review -------------------------------------------------------------------------


def review(interaction: Interaction, context: CommandContext) -> dict:
    embed, buttons = _review_list(interaction, context)
    return message(embeds=[embed], components=buttons)


def judge(interaction: Interaction, context: CommandContext, verdict: str, memory_id: str, tag: str) -> dict:
    """Approve or reject the memory a review button was shown for, if it still awaits review as shown."""
    guild_id = str(interaction.guild_id)
    if verdict == APPROVE:
        memory_control.approve(guild_id, memory_id, tag, context.ltm_store)
        note = f"Approved server memory #{memory_id}: kioku may recall it from now on."
    else:
        memory_control.reject(guild_id, memory_id, tag, context.ltm_store)
        note = f"Rejected server memory #{memory_id}: it is deleted."
    embed, buttons = _review_list(interaction, context)
    return updated_message(note, embeds=[embed], components=buttons)


def _review_list(interaction: Interaction, context: CommandContext) -> tuple[dict, list[dict]]:
    """The oldest memories awaiting review, each with its Approve and Reject buttons."""
    viewer = _viewer(interaction, context)
    shown, waiting = memory_control.awaiting_review_tagged(
        str(interaction.guild_id), context.ltm_store, PAGE_SIZE
    )
    embed: dict[str, Any] = {"title": "Server memories awaiting review", "color": EMBED_COLOR_INFO}
    if not waiting:
        embed["description"] = "Nothing awaits review." + (
            " Memory moderation is open: new server memories are saved without review."
            if viewer.config.memory_moderation is MemoryModeration.OPEN
            else ""
        )
        return embed, []
    embed["description"] = (
        f"{waiting} awaiting review, oldest first. **Approve** lets kioku recall a memory; "
        "**Reject** deletes it."
    )
    embed["fields"] = [_memory_field(memory, viewer, "the review") for memory in shown]
    if waiting > len(shown):
        embed["footer"] = {"text": f"Showing the oldest {len(shown)} of {waiting}"}
    return embed, action_rows([_review_buttons(memory) for memory in shown])


def _review_buttons(memory: Memory) -> list[Button]:
    return [
        Button(_review_id(APPROVE, memory), f"Approve #{memory.memory_id}", ButtonStyle.SUCCESS),
        Button(_review_id(REJECT, memory), f"Reject #{memory.memory_id}", ButtonStyle.DANGER),
    ]


def _review_id(verdict: str, memory: Memory) -> str:
    return REVIEW_BUTTON.encode(verdict, memory.memory_id, _tag(memory))


def _tag(memory: Memory) -> str:
    return memory.review_tag or ""


# -- the buttons -------------------------------------------------------------------------------------


BUTTONS: Final[dict[CustomId, CustomIdHandler]] = {
    PAGE_BUTTON: show_page,
    ORDERED_PAGE_BUTTON: show_ordered_page,
    REVIEW_BUTTON: judge,
}
"""The list's page buttons and the review's verdicts (the manager check is the command's)."""


HANDLERS: Final[dict[tuple[str, ...], Handler]] = {
    (GROUP, LIST): list_memories,
    (GROUP, FORGET): forget,
    (GROUP, MODERATION): set_moderation,
    (GROUP, REVIEW): review,
    (GROUP, memory_add.ADD): memory_add.add_server,
    (GROUP, memory_history.EDIT): edit,
    (GROUP, memory_history.HISTORY): history,
}

OPTIONS: Final = {
    "type": OptionType.SUB_COMMAND_GROUP,
    "name": GROUP,
    "description": "Long-term memories kept for the whole server",
    "options": [
        {
            "type": OptionType.SUB_COMMAND,
            "name": LIST,
            "description": "Every server memory with its id, status, author and channel",
            "options": [memory_order.OPTION],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": FORGET,
            "description": "Delete one server memory",
            "options": [
                {
                    "type": OptionType.INTEGER,
                    "name": MEMORY_ID_OPTION,
                    "description": "The memory's number, as /server memories list shows it",
                    "required": True,
                    "min_value": 1,
                    "autocomplete": True,
                }
            ],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": MODERATION,
            "description": "Whether members' new server memories wait for a manager's review",
            "options": [
                {
                    "type": OptionType.STRING,
                    "name": MODE_OPTION,
                    "description": "open: saved at once; approval: members' memories wait for review",
                    "required": True,
                    "choices": [
                        {"name": "open: saved at once", "value": MemoryModeration.OPEN.value},
                        {
                            "name": "approval: a manager approves members' memories",
                            "value": MemoryModeration.APPROVAL.value,
                        },
                    ],
                }
            ],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": REVIEW,
            "description": "Approve or reject the server memories awaiting review",
        },
        memory_add.SERVER_ADD_OPTION,
        *memory_history.options(
            "Correct a server memory; its old text is kept as its history",
            "The earlier texts of a server memory",
        ),
    ],
}
