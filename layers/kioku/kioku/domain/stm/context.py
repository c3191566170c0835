"""The short-term memory context stage (seed 000): memory items, the nudge, and where both go.

``build_short_term_memory_context`` never raises: a broken row or a bug must not cost the turn its
reply, so any unexpected error is logged and the turn goes on without short-term memory.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from kioku.domain.models import ANCHORED_TOP_DEPTH, ContextItem, ContextTag, RenderMode
from kioku.domain.stm.categories import active_categories
from kioku.domain.stm.entries import (
    CrudeMessage,
    CrudeRole,
    StmEntry,
    StmLimits,
    live_categories,
    live_crude,
    live_summary,
    may_recall_row,
)
from kioku.domain.stm.nudge import build_nudge, nudge_due
from kioku.domain.stm.update_tool import TOOL_NAME
from kioku.domain.text import (
    END_OF_MESSAGE,
    START_OF_MESSAGE,
    MentionNames,
    Shape,
    expand_macros,
    one_line_name,
    outside,
    readable_mentions,
)
from kioku.domain.turn import TurnContext

logger = logging.getLogger(__name__)

_MINUTE = timedelta(minutes=1)
_HOUR = timedelta(hours=1)
_DAY = timedelta(days=1)
_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class StmState:
    """What the store loaded for a turn: the current channel's row and candidate rows elsewhere
    (same scope, plus the user's own DM rows when they opted in to cross-server memory)."""

    current: StmEntry | None = None
    others: tuple[StmEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class StmContext:
    """The stage's output; the nudge travels out of band so the pipeline can place it by depth."""

    memory_items: tuple[ContextItem, ...] = ()
    nudge_item: ContextItem | None = None
    nudge_injection_depth: int = 0
    memory_injection_depth: int = ANCHORED_TOP_DEPTH
    shown: tuple[StmEntry, ...] = ()
    """The rows the memory items come from, in order ("Why this answer?" keeps their addresses)."""


def build_short_term_memory_context(turn: TurnContext, state: StmState, limits: StmLimits) -> StmContext:
    """Other-channel memories, the same-channel memory, the cadence nudge and both depths."""
    try:
        return _build(turn, state, limits)
    except Exception:
        logger.exception("short-term memory context failed; the turn continues without it")
        return StmContext()


def _build(turn: TurnContext, state: StmState, limits: StmLimits) -> StmContext:
    now = turn.now
    names = _mention_names(turn, state)
    injected: list[tuple[StmEntry, ContextItem]] = []
    for entry in other_channel_entries(turn, state.others):
        item = _other_channel_item(entry, turn, limits, names)
        if item is not None:
            injected.append((entry, item))
        if len(injected) >= limits.max_other_channels:
            break

    current = state.current if _is_current_row(turn, state.current) else None
    if current is not None:
        block = _memory_block(current, turn, limits, names)
        if block:
            injected.append((current, _memory_item(f"{_SAME_CHANNEL_HEADER}\n{block}")))

    stm = turn.config.stm
    newest = max((e.last_updated for e, _ in injected if e.last_updated is not None), default=None)
    return StmContext(
        memory_items=tuple(item for _, item in injected),
        nudge_item=build_nudge(turn, limits) if nudge_due(turn, current) else None,
        nudge_injection_depth=max(stm.nudge_injection_depth, 0),
        memory_injection_depth=resolve_memory_depth(stm.content_injection_depth, newest, now, limits),
        shown=tuple(entry for entry, _ in injected),
    )


def resolve_memory_depth(configured: int, newest: datetime | None, now: datetime, limits: StmLimits) -> int:
    """The freshness override: while the newest injected entry is younger than the fresh window the
    block is pulled to ``fresh_injection_depth`` at most; -1 (anchored top) is replaced outright."""
    configured = max(configured, ANCHORED_TOP_DEPTH)
    if newest is None or now - newest >= limits.fresh_window:
        return configured
    if configured == ANCHORED_TOP_DEPTH:
        return limits.fresh_injection_depth
    return min(configured, limits.fresh_injection_depth)


def other_channel_entries(turn: TurnContext, candidates: Iterable[StmEntry]) -> list[StmEntry]:
    """Candidates allowed into this turn, newest first: another channel, the same persona lineage,
    and recallable here (``may_recall_row``: the channel privacy rules, or the user's own DM rows
    when they opted in to cross-server memory)."""
    config = turn.config
    policy = config.privacy
    allowed: dict[tuple[str | None, str | None, str, str], StmEntry] = {}
    for entry in candidates:
        address = entry.address
        if (
            entry.channel_id == turn.channel_id
            or entry.lineage_id != config.persona.lineage_id
            or not may_recall_row(
                entry,
                turn.place,
                policy,
                user_id=turn.user.user_id,
                cross_server_opt_in=turn.profile.cross_server_opt_in,
            )
        ):
            continue
        allowed[(address.guild_id, address.user_id, address.channel_id, address.persona_id)] = entry
    return sorted(allowed.values(), key=_recency, reverse=True)


def relative_age(then: datetime, now: datetime) -> str:
    """ "just now", "5 minutes ago", "2 hours ago", "yesterday", "3 days ago"."""
    age = now - then
    if age < _MINUTE:
        return "just now"
    if age < _HOUR:
        return _ago(int(age / _MINUTE), "minute")
    if age < _DAY:
        return _ago(int(age / _HOUR), "hour")
    if age < 2 * _DAY:
        return "yesterday"
    return _ago(int(age / _DAY), "day")


MEMORY_BLOCK_OPENERS: Final = ("[Short-term memory of this channel]", "[Short-term memory from ")
"""How every memory block begins (the nudge, which is no memory, begins otherwise)."""

_SAME_CHANNEL_HEADER = (
    f"{MEMORY_BLOCK_OPENERS[0]}\n"
    f"Your own running notes on the conversation here, saved earlier with {TOOL_NAME}. Where the "
    "conversation itself says otherwise, the conversation is newer."
)
_OTHER_CHANNEL_NOTE = "Background from elsewhere, not the conversation you are replying to."


def _other_channel_item(
    entry: StmEntry, turn: TurnContext, limits: StmLimits, names: MentionNames
) -> ContextItem | None:
    block = _memory_block(entry, turn, limits, names)
    count = turn.config.stm.crude_message_count
    count = limits.default_crude_message_count if count is None else max(count, 0)
    crude = live_crude(entry, turn.now, limits)[-count:] if count else ()
    if block and turn.config.stm.render_mode is RenderMode.SUPERSEDE:
        crude = ()
    if not block and not crude:
        return None
    parts = [_other_channel_header(entry, turn), _OTHER_CHANNEL_NOTE]
    if block:
        parts.append(block)
    if crude:
        parts.append(
            "Recent messages there (oldest first; each between <som> and <eom>, line breaks shown as ⏎):\n"
            + "\n".join(_crude_line(m, names) for m in crude)
        )
    return _memory_item("\n".join(parts))


def _other_channel_header(entry: StmEntry, turn: TurnContext) -> str:
    if entry.address.is_dm:
        where = "your direct messages with this user"
    elif entry.address.guild_id != turn.guild_id:
        where = "a channel in another server"
    elif entry.channel_name:
        where = f"#{one_line_name(entry.channel_name)}"
    else:
        where = f"another channel (id {entry.channel_id})"
    age = f", last active {relative_age(entry.last_updated, turn.now)}" if entry.last_updated else ""
    return f"{MEMORY_BLOCK_OPENERS[1]}{where}{age}]"


def _memory_block(entry: StmEntry, turn: TurnContext, limits: StmLimits, names: MentionNames) -> str | None:
    """The summary or the category sections of ``entry``: the server's current mode first, the
    other kind when the current mode has nothing written."""
    summary = live_summary(entry)
    categories = live_categories(entry)
    configured = (
        active_categories(turn.config.categories, limits.max_categories) if _same_scope(turn, entry) else ()
    )
    if categories and (configured or not summary):
        labels = [(c.slug, c.label) for c in configured] + list(entry.category_labels)
        texts = {slug: _notes(text, turn, names) for slug, text in categories.items()}
        return _category_block(texts, labels)
    return f"Summary:\n{_notes(summary, turn, names)}" if summary else None


def _category_block(texts: Mapping[str, str], labels: Sequence[tuple[str, str]]) -> str:
    label_of: dict[str, str] = {}
    for slug, label in labels:
        label_of.setdefault(slug, label)
    order = [slug for slug in label_of if slug in texts] + sorted(
        slug for slug in texts if slug not in label_of
    )
    return "\n\n".join(
        f"{one_line_name(label_of.get(slug, slug.replace('_', ' ').title()))}:\n{texts[slug]}"
        for slug in order
    )


def _crude_line(message: CrudeMessage, names: MentionNames) -> str:
    """One recalled message on one line, its speaker in a header as the dialogue writes it, so no
    message can add a line that reads as another speaker. What someone wrote is shown as written:
    mentions read as names, but a ``{user}`` they typed stays ``{user}`` (filled in, a nickname
    could carry a marker past the neutraliser)."""
    speaker = one_line_name(message.speaker) or "unknown"
    if message.role is CrudeRole.ASSISTANT:
        speaker = f"{speaker} (you)"
    text = (
        outside(readable_mentions(message.text, names))
        .replace("\r\n", "\n")
        .replace("\r", "\n")
        .replace("\n", " ⏎ ")
    )
    return f"[{speaker} | UserID:{message.user_id}] {START_OF_MESSAGE}{text}{END_OF_MESSAGE}"


def _memory_item(text: str) -> ContextItem:
    return ContextItem(role="user", tag=ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY, content=text)


def _is_current_row(turn: TurnContext, entry: StmEntry | None) -> bool:
    return (
        entry is not None
        and entry.channel_id == turn.channel_id
        and entry.lineage_id == turn.config.persona.lineage_id
        and _same_scope(turn, entry)
    )


def _same_scope(turn: TurnContext, entry: StmEntry) -> bool:
    if turn.is_dm:
        return entry.address.user_id == turn.user.user_id
    return entry.address.guild_id == turn.guild_id


def _recency(entry: StmEntry) -> datetime:
    return entry.last_updated or _NEVER


def _mention_names(turn: TurnContext, state: StmState) -> MentionNames:
    """The turn's names, with the people taking part and the channels whose rows it may recall."""
    users = {p.user_id: p.display_name for p in turn.participants}
    users[turn.user.user_id] = turn.user.display_name
    users[turn.bot.user_id] = turn.bot_name
    channels = {
        entry.channel_id: entry.channel_name
        for entry in other_channel_entries(turn, state.others)
        if entry.channel_name
    }
    known = turn.mention_names
    return MentionNames({**known.users, **users}, known.roles, {**channels, **known.channels})


def _notes(text: str, turn: TurnContext, names: MentionNames) -> str:
    """A model-written text (a summary, a category) as shown: ``{user}``/``{bot}`` and Discord
    mentions written as names, then the neutraliser: no marker or header it holds, nor one a name
    brings in, survives, wherever the note is replayed."""
    expanded = expand_macros(text, {"user": turn.user.display_name, "bot": turn.bot_name})
    return outside(readable_mentions(expanded, names), Shape.NOTES)


def _ago(count: int, unit: str) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'} ago"
