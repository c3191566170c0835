"""The model's answer → Discord messages: strip echoed history metadata, split under the length limit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kioku.domain.text import END_OF_MESSAGE, START_OF_MESSAGE

DISCORD_MESSAGE_LIMIT: Final = 2000
MIN_SPLIT_LIMIT: Final = 100  # room for a reopened fence line, its closing fence and some text
FENCE: Final = "```"
FENCE_CLOSE: Final = "\n" + FENCE

_FENCE_TAG = re.compile(r"[\w+#.-]{0,20}")
_MARKERS = (
    START_OF_MESSAGE,
    END_OF_MESSAGE,
    *(marker.replace("<", "</", 1) for marker in (START_OF_MESSAGE, END_OF_MESSAGE)),
)
"""The markers, and the closing-tag spelling a model sometimes gives them (``</som>``)."""
_MARKER = "(?:" + "|".join(map(re.escape, _MARKERS)) + ")"
_ANY_MARKER = re.compile(_MARKER)
_ECHOED_HEADER = re.compile(
    rf"[ \t]*(?:{_MARKER}[ \t]*)*\[[^\[\]\n]*\|\s*UserID:\s*(?P<user_id>[^\s|\[\]]*)[^\[\]\n]*\][ \t]*"
)
"""A dialogue or recalled-line header at the start of a line, after any markers: ``<som>[Name | UserID:1]``."""
_HEADER_BEGUN = re.compile(rf"[ \t]*(?:{_MARKER}[ \t]*)*\[[^\[\]\n]*\|\s*UserID:")
"""A line that begins a header, complete or not: ``[Name | UserID:`` and anything or nothing after."""
_HEADER_CUT_SHORT = re.compile(
    rf"[ \t]*(?:{_MARKER}[ \t]*)*\[[^\[\]\n|]*\|[ \t]*(?:U(?:s(?:e(?:r(?:I(?:D)?)?)?)?)?)?[ \t]*(?:…)?[ \t]*"
)
"""The last line, when the answer stopped before its header's ``UserID:`` was out: ``[Name | Us``."""
_HEADER_MID_LINE = re.compile(r"(?<=[^\s])[ \t]*(?=\[[^\[\]\n]*\|\s*UserID:)")
"""Where a header starts after other text on its line: it starts a line of its own there."""
_SENT_LINE = re.compile(
    rf"[ \t]*(?:{_MARKER}[ \t]*)*Sent: \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(unix \d+\)[ \t]*"
)
"""The history's own "Sent:" line (kioku.domain.dialogue), which no reply has reason to contain."""
_METADATA_PREFIXES = ("Sent: ", "Replying to @", "Reactions: ")
RECALLED_LINE_BREAK: Final = "⏎"
"""How a recalled line writes its line breaks (kioku.domain.stm.context); a model copies it as is."""


def strip_echoed_metadata(text: str, bot_user_id: str | None = None) -> str:
    """Remove the history format a model sometimes imitates: headers, their metadata lines, markers
    and recalled lines' ``⏎``. A header after the reply has begun is the model writing the next turn
    of the conversation: the bot's own (``bot_user_id``) just loses its header, anyone else's ends
    the reply there, so the bot never posts words in someone else's name."""
    text = (
        text.replace("\r\n", "\n")
        .replace(f" {RECALLED_LINE_BREAK} ", "\n")
        .replace(RECALLED_LINE_BREAK, "\n")
    )
    kept: list[str] = []
    in_metadata = False
    lines = _HEADER_MID_LINE.sub("\n", text).split("\n")
    for number, line in enumerate(lines):
        header = _ECHOED_HEADER.match(line)
        if not header and (
            _HEADER_BEGUN.match(line) or (number == len(lines) - 1 and _HEADER_CUT_SHORT.fullmatch(line))
        ):
            break  # a header the model began and never closed (stopped at max_tokens): nothing after it is a reply
        if header:
            if _has_words(kept) and header.group("user_id") != bot_user_id:
                break
            line, in_metadata = line[header.end() :], True
            if not line.strip():
                continue
        if _SENT_LINE.fullmatch(line) and not in_metadata:
            if _has_words(kept):
                break  # a message of its own begins: the model is writing the conversation on
            continue
        if in_metadata and _ANY_MARKER.sub("", line).lstrip().startswith(_METADATA_PREFIXES):
            continue
        in_metadata = False
        kept.append(line)
    return _ANY_MARKER.sub("", "\n".join(kept)).strip()


def _has_words(lines: list[str]) -> bool:
    return any(_ANY_MARKER.sub("", line).strip() for line in lines)


@dataclass(frozen=True, slots=True)
class _Fence:
    start: int  # the opening ```
    body_start: int  # first character after the opening line
    close_start: int  # the closing ``` (len(text) when the block is never closed)
    close_end: int
    opener: str  # the opening line to repeat in the next chunk, e.g. "```python"


CUT_MARK: Final = " …"


def at_most(chunks: list[str], count: int, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """The first ``count`` chunks; when some are left out, the last one shown ends with a visible "…"."""
    if len(chunks) <= count:
        return chunks
    kept = chunks[:count]
    kept[-1] = kept[-1][: limit - len(CUT_MARK)].rstrip() + CUT_MARK
    return kept


def split_reply(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """Split ``text`` into non-empty chunks of at most ``limit`` characters.

    Cuts prefer paragraph breaks, then line breaks, then spaces, and avoid fenced code blocks
    whenever the block fits in a message of its own. A block too long for one message is cut
    between lines, closing the fence at the end of a chunk and reopening it in the next.
    """
    if limit < MIN_SPLIT_LIMIT:
        raise ValueError(f"limit must be at least {MIN_SPLIT_LIMIT}")
    text = text.strip()
    fences = _fences(text)
    chunks: list[str] = []
    start = 0
    while start < len(text):
        open_fence = _fence_with_body_at(fences, start)
        prefix = open_fence.opener + "\n" if open_fence else ""
        if len(prefix) + len(text) - start <= limit:
            _append(chunks, prefix + text[start:])
            break
        budget = limit - len(prefix) - len(FENCE_CLOSE)
        cut, separator = _choose_cut(text, start, budget, fences, limit)
        piece = text[start:cut].rstrip()
        cut_fence = _fence_with_body_at(fences, cut, inclusive_end=True)
        _append(chunks, prefix + piece + (FENCE_CLOSE if cut_fence else ""))
        start = _next_start(text, cut + len(separator), cut_fence, fences)
    return chunks


def _append(chunks: list[str], chunk: str) -> None:
    if chunk.strip():
        chunks.append(chunk)


def _choose_cut(text: str, start: int, budget: int, fences: list[_Fence], limit: int) -> tuple[int, str]:
    def allowed(position: int) -> bool:
        for fence in fences:
            if fence.start < position < fence.body_start:
                return False  # never inside the opening line
            if fence.body_start <= position <= fence.close_start:
                # Splitting a block is acceptable only when it cannot fit in one message anyway.
                return fence.start < start or fence.close_end - fence.start > limit - len(FENCE_CLOSE)
        return True

    end = start + budget
    half = start + budget // 2
    for separator, lowest in (
        ("\n\n", half),
        ("\n", half),
        (" ", half),
        ("\n\n", start + 1),
        ("\n", start + 1),
    ):
        position = _last_allowed(text, separator, lowest, end, allowed)
        if position is not None:
            return position, separator
    position = _last_allowed(text, " ", start + 1, end, allowed)
    if position is not None:
        return position, " "
    return _hard_cut(end, start, fences), ""


def _last_allowed(
    text: str, separator: str, lowest: int, end: int, allowed: Callable[[int], bool]
) -> int | None:
    position = text.rfind(separator, lowest, end + len(separator))
    while position >= lowest:
        if allowed(position):
            return position
        position = text.rfind(separator, lowest, position - 1 + len(separator))
    return None


def _hard_cut(end: int, start: int, fences: list[_Fence]) -> int:
    for fence in fences:
        if fence.start < end < fence.body_start:
            return fence.start if fence.start > start else fence.body_start
    return end


def _next_start(text: str, position: int, cut_fence: _Fence | None, fences: list[_Fence]) -> int:
    if cut_fence is not None and position >= cut_fence.close_start:
        position = cut_fence.close_end  # we already closed this block ourselves
    if _fence_with_body_at(fences, position) is None:
        while position < len(text) and text[position].isspace():
            position += 1
    return position


def _fence_with_body_at(fences: list[_Fence], position: int, *, inclusive_end: bool = False) -> _Fence | None:
    for fence in fences:
        if fence.body_start <= position < fence.close_start or (
            inclusive_end and position == fence.close_start and position > fence.body_start
        ):
            return fence
    return None


def _fences(text: str) -> list[_Fence]:
    fences = []
    position = text.find(FENCE)
    while position >= 0:
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        tag = text[position + len(FENCE) : line_end]
        if _FENCE_TAG.fullmatch(tag) and line_end < len(text):
            opener, body_start = FENCE + tag, line_end + 1
        else:
            opener, body_start = FENCE, position + len(FENCE)
        close = text.find(FENCE, body_start)
        close_start, close_end = (close, close + len(FENCE)) if close >= 0 else (len(text), len(text))
        fences.append(_Fence(position, body_start, close_start, close_end, opener))
        position = text.find(FENCE, close_end) if close >= 0 else -1
    return fences
