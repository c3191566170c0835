"""Edits by hand, and a memory's history: the use cases behind ``/personal memories edit|history``
and ``/server memories edit|history`` (their Discord UI is ``services/commands/memory_history``).

An edit goes through the update tool's own write (``ltm.rewrite_memory``): the text it replaces is
kept as the memory's history in the same conditional write, the duplicate guard and the privacy
level apply as they do to the model's edits. Who may edit or read the history:

- a person: a memory about them (their personal memories, whoever saved them, wherever: their list
  shows them all; and the server memories that name them), and a server memory about nobody that
  they wrote. The history of a server memory they wrote about someone else is theirs to read too
  (the export gives them its text already), never that of a personal memory they saved about
  someone else, whose text is that person's. A server memory only from where a turn could recall
  it (``curation.text_shown_to_manager``'s rule, the bypass aside): its earlier texts were said in
  the same channels or wider, never narrower, so they are no more private than it is;
- a manager: the server's memories whose text they may read where they ask from
  (``curation.text_shown_to_manager``).

Anyone else is told there is no such memory, so nobody learns that it exists; nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from kioku.domain.ltm.arguments import parse_memory_text
from kioku.domain.ltm.curation import text_shown_to_manager
from kioku.domain.ltm.memory import ExpiryChange, Memory, MemoryNotFound, ScopeKind
from kioku.domain.ltm.saving import pin_user_token
from kioku.domain.privacy import Place, PrivacyPolicy
from kioku.services import ltm, memory_control
from kioku.services.memory_control import PersonMemories


def about_person(user_id: str, memory_id: str, store: PersonMemories) -> Memory | None:
    """The memory ``memory_id`` about ``user_id`` (personal, or a server memory naming them)."""
    return store.find(ScopeKind.PERSONAL, user_id, memory_id) or next(
        (m for m in memory_control.memories_about(user_id, store) if m.memory_id == memory_id), None
    )


def editable_by_person(
    user_id: str, memory_id: str, place: Place, policy: PrivacyPolicy, store: PersonMemories
) -> Memory:
    """What ``/personal memories edit`` at ``place`` (of a server of ``policy``) may change: a
    memory about ``user_id``, or a server memory about nobody that they wrote; else
    ``MemoryNotFound``."""
    return _for_person(user_id, memory_id, place, policy, store, lambda m: m.about is None)


def history_for_person(
    user_id: str, memory_id: str, place: Place, policy: PrivacyPolicy, store: PersonMemories
) -> Memory:
    """What ``/personal memories history`` at ``place`` may show: a memory about ``user_id``, or a
    server memory that they wrote; else ``MemoryNotFound``."""
    return _for_person(user_id, memory_id, place, policy, store, lambda m: True)


def _for_person(
    user_id: str,
    memory_id: str,
    place: Place,
    policy: PrivacyPolicy,
    store: PersonMemories,
    written: Callable[[Memory], bool],
) -> Memory:
    memory = about_person(user_id, memory_id, store)
    if memory is None and place.guild_id is not None:
        found = store.find(ScopeKind.SERVER, place.guild_id, memory_id)
        if found is not None and found.author_id == user_id and written(found):
            memory = found
    if memory is not None and memory.scope.kind is ScopeKind.SERVER:
        here = memory.scope.owner_id == place.guild_id
        if not here or not text_shown_to_manager(memory, place, policy, sees_every_channel=False):
            memory = None
    if memory is None:
        raise MemoryNotFound(
            f"I keep no memory #{memory_id} about you, or written by you, that I may show here"
        )
    return memory


def edit(
    memory: Memory,
    text: str | None,
    *,
    editor_id: str,
    editor_name: str,
    now: datetime,
    max_length: int,
    store: PersonMemories,
    policy: PrivacyPolicy,
    expiry: ExpiryChange | None = None,
) -> Memory:
    """``memory`` saying ``text`` (checked as the tools check theirs; None: the text it says), with
    ``expiry`` if given, written by ``editor_id``: the update tool's write, keeping what it replaces
    as history. In a server memory ``{user}`` is written down as the editor, as the tool writes it
    for whoever speaks; an unchanged text keeps its embedding."""
    content = memory.content if text is None else parse_memory_text(text, max_length)
    if text is not None and memory.scope.kind is ScopeKind.SERVER:
        content = pin_user_token(content, editor_name)
    embedding = memory.embedding if content == memory.content else None
    return ltm.rewrite_memory(
        store, memory, content, now, editor_id=editor_id, policy=policy, embedding=embedding, expiry=expiry
    )
