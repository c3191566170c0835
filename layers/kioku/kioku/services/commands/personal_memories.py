"""``/personal memories list|forget|forget-all|export``: what kioku keeps about you, under your
control (``edit`` and ``history`` are ``memory_history``'s).

Every answer is ephemeral: only the person who asked sees it. Buttons name the person they belong to
in their custom_id and are refused to anyone else, so a copied button cannot act for someone else.
"""

from __future__ import annotations

from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import THREAD_TYPES, ButtonStyle, OptionType
from kioku.discord.responses import message, updated_message
from kioku.discord.ui import EMBED_COLOR_ERROR, EMBED_COLOR_INFO, Button, action_rows, relative_time
from kioku.domain.forgetting import snowflake_time
from kioku.domain.ltm.memory import Memory, MemoryStatus, ScopeKind
from kioku.domain.ltm.usage import ListOrder, in_order
from kioku.domain.ltm.wording import counted, for_people, until_text
from kioku.domain.privacy import Origin, Place, origin_known_to
from kioku.domain.text import shorten
from kioku.domain.why import ShownNote, memory_key_text
from kioku.services import memory_control
from kioku.services.commands import memory_add, memory_history, memory_order
from kioku.services.commands.base import CustomIdHandler, Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId, digits, number, one_of
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.memory_choices import id_choices

GROUP: Final = "memories"
LIST, FORGET, FORGET_ALL, EXPORT = "list", "forget", "forget-all", "export"
MEMORY_ID_OPTION: Final = "memory_id"
PAGE_SIZE: Final = 5
MAX_SHOWN_CHARS: Final = 900
"""Five memories of this length, with their headers, stay under Discord's 6,000-character embed total."""
MAX_MEMORY_ID: Final = 10**12
MAX_FIELD_NAME_CHARS: Final = 256

CONFIRM, CANCEL = "confirm", "cancel"
PAGE_BUTTON: Final = CustomId("personal", LIST, digits("user", 20), number("page", 6))
ORDERED_PAGE_BUTTON: Final = CustomId(
    "personal", LIST, memory_order.ORDER_FIELD, digits("user", 20), number("page", 6)
)
FORGET_THIS_BUTTON: Final = CustomId("personal", FORGET, digits("user", 20), digits("memory", 12))
"""Forget one memory about the person the list belongs to, whoever saved it: asks first."""
FORGET_THIS_CONFIRM: Final = CustomId(
    "personal", FORGET, one_of("choice", CONFIRM, CANCEL), digits("user", 20), digits("memory", 12)
)
REMOVAL_WARNING: Final = (
    "Someone else saved it: once forgotten, it is gone for everyone. The server's managers see only "
    "how many memories the people they were about removed lately, never which one or who."
)
OWN_REMOVAL_WARNING: Final = "Once forgotten, I cannot recall it again; it cannot be undone."
FORGET_ALL_BUTTON: Final = CustomId(
    "personal", FORGET_ALL, one_of("choice", CONFIRM, CANCEL), digits("user", 20)
)

NOT_YOURS: Final = "These buttons belong to someone else's request."


def list_memories(interaction: Interaction, context: CommandContext) -> dict:
    embed, buttons = _list_page(interaction, context, 0, memory_order.order_of(interaction))
    return message(embeds=[embed], components=buttons)


def _list_page(
    interaction: Interaction, context: CommandContext, page: int, order: ListOrder | None = None
) -> tuple[dict, list[dict]]:
    """One page of the list in ``order`` (the last when ``page`` is past it) and its Previous/Next
    buttons. Least used: by the later of each memory's folded ``last_shown`` and the notes read."""
    user_id = _invoker_id(interaction)
    place = _place(interaction)
    known, _ = memory_control.usage_notes(
        user_id,
        place,
        context.turn_ledger,
        lambda guild_id: context.config_store.get_server_config(guild_id).privacy,
    )
    uses = memory_uses(known)
    noted = {key: last.at for key, (_, last) in uses.items()}
    memories = in_order(memory_control.memories_about(user_id, context.ltm_store), order, noted)
    now = context.clock()
    pages = max(1, -(-len(memories) // PAGE_SIZE))
    page = min(max(page, 0), pages - 1)
    shown = memories[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
    by_others = [memory for memory in memories if memory.author_id != user_id]
    embed = {
        "title": "What I remember about you",
        "color": EMBED_COLOR_INFO,
        "description": (
            "Nothing here."
            if not memories
            else f"{counted(len(memories), 'memory', 'memories')}"
            + (f", {memory_order.ORDER_NAMES[order]}" if order else "")
            + f" · page {page + 1} of {pages}. "
            "Each has a Forget button below (or `/personal memories forget memory_id:<id>`)."
            + (
                f"\nSaved by others about you: {counted(len(by_others), 'memory', 'memories')}; whoever "
                "saved it, it is yours to remove."
                if by_others
                else ""
            )
        ),
        "fields": [
            _memory_field(memory, user_id, place, uses, memory_order.unused_text(memory, order, now, noted))
            for memory in shown
        ],
    }
    rows = []
    if pages > 1:

        def to(number: int) -> str:
            if order is None:
                return PAGE_BUTTON.encode(user_id, number)
            return ORDERED_PAGE_BUTTON.encode(order.value, user_id, number)

        rows.append(
            [
                Button(to(max(page - 1, 0)), "Previous", disabled=page == 0),
                Button(to(page + 1), "Next", disabled=page >= pages - 1),
            ]
        )
    if shown:  # each memory about them, whoever saved it, is theirs to remove
        rows.append(
            [
                Button(
                    FORGET_THIS_BUTTON.encode(user_id, memory.memory_id),
                    f"Forget #{memory.memory_id}",
                    style=ButtonStyle.DANGER,
                )
                for memory in shown
            ]
        )
    return embed, action_rows(rows) if rows else []


def memory_choices(interaction: Interaction, context: CommandContext) -> list[dict[str, Any]]:
    """While ``memory_id`` is typed: the memories about the one typing (their ids, or words of
    their text), each named by its number and text as their list shows it."""
    focused = interaction.focused_option()
    if focused is None or focused[0] != MEMORY_ID_OPTION:
        return []
    memories = memory_control.memories_about(_invoker_id(interaction), context.ltm_store)
    return id_choices(
        focused[1], [(m.memory_id, for_people(m.content, about_you=True, name="you")) for m in memories]
    )


def forget(interaction: Interaction, context: CommandContext) -> dict:
    user_id = _invoker_id(interaction)
    raw = interaction.option_values().get(MEMORY_ID_OPTION)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 < raw < MAX_MEMORY_ID:
        raise Refused(
            Refusal.NOT_UNDERSTOOD, "`memory_id` is the number shown as #12345 in `/personal memories list`."
        )
    forgotten = memory_control.forget_memory_about(user_id, str(raw), context.ltm_store)
    return message(f"Forgotten: memory #{forgotten.memory_id}.")


def ask_to_forget_all(interaction: Interaction, context: CommandContext) -> dict:
    user_id = _invoker_id(interaction)
    embed = {
        "title": "Forget everything about you?",
        "color": EMBED_COLOR_ERROR,
        "description": (
            "This deletes every long-term memory about you (whoever saved it, in every server and "
            "persona, server memories that name you too), our DM's short-term memory, and every "
            "message of yours I keep in any channel's short-term memory. It cannot be undone. "
            "Memories you saved that are not about you (about someone else, or server memories that do "
            "not name you) stay, without your name. "
            "Summaries I wrote of whole conversations stay; a server's managers can rewrite them with "
            "`/persona stm edit`."
        ),
    }
    buttons = action_rows(
        [
            [
                Button(
                    FORGET_ALL_BUTTON.encode(CONFIRM, user_id), "Forget everything", style=ButtonStyle.DANGER
                ),
                Button(FORGET_ALL_BUTTON.encode(CANCEL, user_id), "Cancel"),
            ]
        ]
    )
    return message(embeds=[embed], components=buttons)


def export(interaction: Interaction, context: CommandContext) -> dict:
    """Answers "thinking…" and queues the export; the worker attaches the file to that answer."""
    from kioku.domain.turn_jobs import TurnSource

    return memory_add.queue_for_worker(interaction, context, TurnSource.EXPORT)


SUBCOMMANDS: Final[dict[tuple[str, ...], Handler]] = {
    (GROUP, LIST): list_memories,
    (GROUP, FORGET): forget,
    (GROUP, FORGET_ALL): ask_to_forget_all,
    (GROUP, EXPORT): export,
    (GROUP, memory_add.ADD): memory_add.add_personal,
    **{(GROUP, name): handler for name, handler in memory_history.PERSONAL_HANDLERS.items()},
}


def turn_page(interaction: Interaction, context: CommandContext, owner: str, page: int) -> dict:
    """A Previous or Next button of the list: only the person it lists may turn it."""
    _check_owner(interaction, owner)
    embed, buttons = _list_page(interaction, context, page)
    return updated_message(embeds=[embed], components=buttons)


def turn_ordered_page(
    interaction: Interaction, context: CommandContext, order: str, owner: str, page: int
) -> dict:
    """A Previous or Next button of a list in another order than the first: as ``turn_page``."""
    _check_owner(interaction, owner)
    embed, buttons = _list_page(interaction, context, page, ListOrder(order))
    return updated_message(embeds=[embed], components=buttons)


def answer_forget_all(interaction: Interaction, context: CommandContext, choice: str, owner: str) -> dict:
    """The confirmation of forget-all, confirmed or cancelled by the person it would forget."""
    _check_owner(interaction, owner)
    if choice == CANCEL:
        return updated_message(embeds=[{"title": "Nothing was forgotten.", "color": EMBED_COLOR_INFO}])
    # forgotten as of the later of our clock and Discord's (the confirmation's id): every message
    # sent before it is then older by the clock turns are measured on, whichever of the two is ahead
    at = max(context.clock(), snowflake_time(interaction.id))
    report = memory_control.forget_all(
        owner, context.ltm_store, context.stm_store, ledger=context.turn_ledger, now=at
    )
    if report.nothing:
        description = "There was nothing left to forget."
    else:
        description = (
            f"Forgotten: {counted(report.memories, 'long-term memory', 'long-term memories')} about you, "
            f"{counted(report.dm_rows, 'DM short-term memory', 'DM short-term memories')}, and "
            f"{report.lines} of your messages in channels' short-term memory. "
            + (
                f"{counted(report.unnamed, 'memory', 'memories')} you saved that "
                f"{'is' if report.unnamed == 1 else 'are'} not about you "
                f"{'stays' if report.unnamed == 1 else 'stay'}, without your name."
            )
        )
    return updated_message(embeds=[{"title": "Done", "description": description, "color": EMBED_COLOR_INFO}])


def forget_this(interaction: Interaction, context: CommandContext, owner: str, memory_id: str) -> dict:
    """A Forget button of the list, on a memory about its owner: only they may, and only once they
    confirm (one click deletes nothing); one someone else saved says who else it is gone for."""
    _check_owner(interaction, owner)
    memory = next(
        (m for m in memory_control.memories_about(owner, context.ltm_store) if m.memory_id == memory_id), None
    )
    own = memory is not None and memory.author_id == owner
    embed = {
        "title": f"Forget memory #{memory_id}?",
        "description": OWN_REMOVAL_WARNING if own else REMOVAL_WARNING,
        "color": EMBED_COLOR_ERROR,
    }
    buttons = [
        Button(FORGET_THIS_CONFIRM.encode(CONFIRM, owner, memory_id), "Forget it", style=ButtonStyle.DANGER),
        Button(FORGET_THIS_CONFIRM.encode(CANCEL, owner, memory_id), "Cancel"),
    ]
    return updated_message(embeds=[embed], components=action_rows([buttons]))


def answer_forget_this(
    interaction: Interaction, context: CommandContext, choice: str, owner: str, memory_id: str
) -> dict:
    """The subject's answer to ``forget_this``: forget the memory, or back to the list."""
    _check_owner(interaction, owner)
    if choice != CONFIRM:
        embed, buttons = _list_page(interaction, context, 0)
        return updated_message(embeds=[embed], components=buttons)
    forgotten = memory_control.forget_memory_about(owner, memory_id, context.ltm_store)
    embed, buttons = _list_page(interaction, context, 0)
    embed["description"] = f"Forgotten: memory #{forgotten.memory_id}.\n" + embed["description"]
    return updated_message(embeds=[embed], components=buttons)


BUTTONS: Final[dict[CustomId, CustomIdHandler]] = {
    PAGE_BUTTON: turn_page,
    ORDERED_PAGE_BUTTON: turn_ordered_page,
    FORGET_ALL_BUTTON: answer_forget_all,
    FORGET_THIS_BUTTON: forget_this,
    FORGET_THIS_CONFIRM: answer_forget_this,
}


def _check_owner(interaction: Interaction, owner: str) -> None:
    """Refuse a click by anyone but the person whose request the buttons answered."""
    if _invoker_id(interaction) != owner:
        raise Refused(Refusal.NOT_ALLOWED, NOT_YOURS)


def _place(interaction: Interaction) -> Place:
    channel = interaction.channel
    thread_parent = channel.parent_id if channel is not None and channel.type in THREAD_TYPES else None
    return Place(interaction.guild_id, interaction.channel_id or "", thread_parent)


def memory_uses(notes: list[ShownNote]) -> dict[str, tuple[int, ShownNote]]:
    """Per memory (``memory_key_text``), how many turns of the last 16 days were shown it (or saved,
    rewrote or found it), and the last of them: one Query of the person's own notes, no scan."""
    uses: dict[str, tuple[int, ShownNote]] = {}
    for note in notes:  # oldest first: the last one stays
        for key in dict.fromkeys(note.memory_keys):
            uses[key] = (uses.get(key, (0, note))[0] + 1, note)
    return uses


def _used(memory: Memory, user_id: str, place: Place, uses: dict[str, tuple[int, ShownNote]]) -> str:
    """ " · shown in 3 turns, last in #general 2 hours ago": the channel named only where the person
    can tell they see it (a DM, a channel public then, the channel they ask from)."""
    found = uses.get(memory_key_text(memory.scope.kind, memory.scope.owner_id, memory.memory_id))
    if found is None:
        return ""
    count, last = found
    where_shown = Origin(last.guild_id, last.channel_id, last.parent_channel_id, last.channel_private)
    if last.guild_id is None:
        named = "our DM"
    elif origin_known_to(where_shown, person_id=user_id, author_id="", place=place):
        named = f"<#{last.channel_id}>"
    else:
        named = memory_control.UNSEEN_CHANNEL
    return f" · used in {counted(count, 'turn', 'turns')} of the last 16 days, last in {named} {relative_time(last.at)}"


def _memory_field(
    memory: Memory,
    user_id: str,
    place: Place,
    uses: dict[str, tuple[int, ShownNote]] | None = None,
    unused: str = "",
) -> dict[str, Any]:
    origin = memory.origin
    if origin.channel_id is None:
        where = "somewhere I did not record"
    elif not origin_known_to(origin, person_id=user_id, author_id=memory.author_id, place=place):
        where = f"in {memory_control.UNSEEN_CHANNEL}"
    elif origin.guild_id is None:
        where = "in our DM"
    else:
        where = f"in <#{origin.channel_id}>"
    if memory.author_id == user_id:
        who = "you"
    else:
        who = f"<@{memory.author_id}>" if memory.author_id else "someone who asked to be forgotten"
    kind = " · server memory" if memory.scope.kind is ScopeKind.SERVER else ""
    if memory.status is MemoryStatus.PENDING:
        kind += ", awaiting review"
    # every memory in one's own list is about oneself: "{user}'s" reads "your", "{user} is" "you are"
    text = shorten(for_people(memory.content, about_you=True, name="you"), MAX_SHOWN_CHARS)
    return {
        "name": shorten(
            f"#{memory.memory_id}{kind} · saved by {who} {where}, {relative_time(memory.created_at)}"
            + until_text(memory.expires_at)
            + unused
            + _used(memory, user_id, place, uses or {}),
            MAX_FIELD_NAME_CHARS,
        ),
        "value": text,
    }


def _invoker_id(interaction: Interaction) -> str:
    invoker = interaction.invoker
    return invoker.id if invoker is not None else ""


OPTIONS: Final = {
    "type": OptionType.SUB_COMMAND_GROUP,
    "name": GROUP,
    "description": "What I remember about you: add to it, see it, correct it, export it, forget it",
    "options": [
        {
            "type": OptionType.SUB_COMMAND,
            "name": LIST,
            "description": "The long-term memories about you",
            "options": [memory_order.OPTION],
        },
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
                    "autocomplete": True,
                }
            ],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": FORGET_ALL,
            "description": "Forget everything about you (asks first)",
        },
        {"type": OptionType.SUB_COMMAND, "name": EXPORT, "description": "Your memories as a JSON file"},
        memory_add.PERSONAL_ADD_OPTION,
        *memory_history.options(
            "Correct a memory about you (or one about nobody you wrote); the old text is kept",
            "The earlier texts of a memory about you or written by you",
        ),
    ],
}
