"""The choices a ``memory_id`` option offers while it is typed: a memory's number and the start of
its text, matched on either."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from kioku.discord.responses import MAX_AUTOCOMPLETE_CHOICES
from kioku.domain.text import shorten

MAX_CHOICE_NAME_CHARS: Final = 100


def id_choices(typed: str, memories: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """``memories`` (id, text as the typist may read it) whose id starts with ``typed``, or whose
    text holds it; the ids first. Discord takes the value as the integer option's."""
    wanted = typed.strip().lstrip("#").casefold()
    by_id = [(i, t) for i, t in memories if i.startswith(wanted)]
    by_text = [(i, t) for i, t in memories if (i, t) not in by_id and wanted in t.casefold()]
    return [
        {
            "name": shorten(f"#{memory_id} · {' '.join(text.split())}", MAX_CHOICE_NAME_CHARS),
            "value": int(memory_id),
        }
        for memory_id, text in [*by_id, *by_text][:MAX_AUTOCOMPLETE_CHOICES]
        if memory_id.isdigit()
    ]
