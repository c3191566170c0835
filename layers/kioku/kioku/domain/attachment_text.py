"""Small text files read into the message they came with (issue 43 item 3): which attachments are
read (text by type or name, from Discord's attachment hosts only), how much (``budget`` characters
per turn across every file, the turn's own message first, at most ``MAX_FILES_READ_PER_TURN``
fetches), how their bytes decode, and the placeholder a file gets when it is not read.

A read file's text is part of its message's text: it stands inside the message's markers, with the
same privacy as the message. Fetching is the ``AttachmentFiles`` port's (``adapters/discord_cdn.py``);
nothing here does I/O, and nothing read is kept past the turn.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final, Protocol
from urllib.parse import urlsplit

from kioku.discord.models import Attachment, Message

DISCORD_ATTACHMENT_HOSTS: Final = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
MAX_ATTACHMENT_BYTES: Final = 32 * 1024
"""A file larger than this is not read (its placeholder says it was too large)."""
MAX_FILES_READ_PER_TURN: Final = 4
TEXT_EXTENSIONS: Final = frozenset(
    [
        "txt",
        "text",
        "md",
        "markdown",
        "rst",
        "csv",
        "tsv",
        "json",
        "jsonl",
        "ndjson",
        "yaml",
        "yml",
        "toml",
        "ini",
        "cfg",
        "conf",
        "env",
        "log",
        "xml",
        "html",
        "htm",
        "css",
        "scss",
        "js",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "jsx",
        "py",
        "pyi",
        "rb",
        "go",
        "rs",
        "java",
        "kt",
        "kts",
        "scala",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cs",
        "swift",
        "php",
        "pl",
        "lua",
        "r",
        "sql",
        "sh",
        "bash",
        "zsh",
        "fish",
        "ps1",
        "bat",
        "dart",
        "ex",
        "exs",
        "erl",
        "hs",
        "clj",
        "vue",
        "svelte",
        "tex",
        "diff",
        "patch",
        "srt",
        "vtt",
    ]
)
TEXT_APPLICATION_TYPES: Final = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/x-ndjson",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/javascript",
        "application/x-javascript",
        "application/typescript",
        "application/sql",
        "application/x-sh",
        "application/x-python",
        "application/x-subrip",
    }
)
UNTYPED: Final = frozenset({"", "application/octet-stream"})
"""Content types that say nothing: the file's name decides."""
MULTI_BYTE_NUL_CHARSETS: Final = ("utf-16", "utf-32")


class Unread(StrEnum):
    """Why a text file was not read into its message."""

    TOO_LARGE = "too large"
    FAILED = "failed"
    NOT_TEXT = "not text"
    OVER_BUDGET = "over budget"


@dataclass(frozen=True, slots=True)
class FetchedFile:
    """What the port fetched: the body, or why there is none (``unread``: ``TOO_LARGE`` or
    ``FAILED``); ``charset``: the one the response's content type declared, if any."""

    body: bytes = b""
    charset: str | None = None
    unread: Unread | None = None


FETCH_FAILED: Final = FetchedFile(unread=Unread.FAILED)
FETCHED_TOO_LARGE: Final = FetchedFile(unread=Unread.TOO_LARGE)


class AttachmentFiles(Protocol):
    def fetch(self, url: str, max_bytes: int) -> FetchedFile:
        """GET ``url`` (one ``fetch_url`` allowed), no redirect followed, at most ``max_bytes``."""
        ...


@dataclass(frozen=True, slots=True)
class ReadAttachment(Attachment):
    """An attachment the turn tried to read: ``text`` is what of it the model is shown (cut to the
    turn's budget, ``cut`` then), or None with ``unread`` saying why."""

    text: str | None = None
    unread: Unread | None = None
    cut: bool = False


@dataclass
class _Reading:
    chars_left: int
    fetches_left: int


def read_text_files(
    history: Sequence[Message],
    files: AttachmentFiles,
    *,
    budget: int,
    cdn_base: str | None,
) -> list[Message]:
    """``history`` (newest first, the turn's own message first) with each text file from Discord's
    attachment hosts read into its message, within ``budget`` characters in all; a history with no
    such file is returned as it is, and nothing is fetched."""
    reading = _Reading(chars_left=budget, fetches_left=MAX_FILES_READ_PER_TURN if budget > 0 else 0)
    read: list[Message] = []
    for message in history:
        attachments = tuple(_read(attachment, files, reading, cdn_base) for attachment in message.attachments)
        changed = any(new is not old for new, old in zip(attachments, message.attachments, strict=True))
        read.append(replace(message, attachments=attachments) if changed else message)
    return read


def _read(
    attachment: Attachment, files: AttachmentFiles, reading: _Reading, cdn_base: str | None
) -> Attachment:
    url = fetch_url(attachment.url, cdn_base)
    if url is None or not is_text_file(attachment):
        return attachment
    if reading.chars_left <= 0 or reading.fetches_left <= 0:
        return _unread(attachment, Unread.OVER_BUDGET)
    reading.fetches_left -= 1
    fetched = files.fetch(url, MAX_ATTACHMENT_BYTES)
    if fetched.unread is not None:
        return _unread(attachment, fetched.unread)
    text = decoded(fetched.body, fetched.charset or declared_charset(attachment.content_type))
    if text is None:
        return _unread(attachment, Unread.NOT_TEXT)
    shown = text[: reading.chars_left]
    reading.chars_left -= len(shown)
    return ReadAttachment(
        attachment.filename, attachment.content_type, attachment.url, text=shown, cut=len(shown) < len(text)
    )


def _unread(attachment: Attachment, why: Unread) -> ReadAttachment:
    return ReadAttachment(attachment.filename, attachment.content_type, attachment.url, unread=why)


def is_text_file(attachment: Attachment) -> bool:
    """A text file by its content type (``text/*`` and a few ``application/`` ones), or, when the
    type says nothing, by its name."""
    mime = attachment.content_type.split(";")[0].strip().lower()
    if mime.startswith("text/") or mime in TEXT_APPLICATION_TYPES:
        return True
    name = attachment.filename.lower()
    return mime in UNTYPED and "." in name and name.rsplit(".", 1)[-1] in TEXT_EXTENSIONS


def fetch_url(url: str, cdn_base: str | None) -> str | None:
    """Where an attachment may be fetched from, or None: only an https URL of Discord's attachment
    hosts (with ``cdn_base``, a local stand-in, its path under that base instead), or a URL already
    under ``cdn_base``. Nothing else is ever fetched."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    if cdn_base and is_under(url, cdn_base):
        return url
    if parts.scheme != "https" or parts.hostname not in DISCORD_ATTACHMENT_HOSTS or port not in (None, 443):
        return None
    if not cdn_base:
        return url
    query = f"?{parts.query}" if parts.query else ""
    return f"{cdn_base.rstrip('/')}{parts.path}{query}"


def is_under(url: str, base: str) -> bool:
    """Whether ``url`` is on ``base``'s origin, under its path (the adapter's last check too)."""
    try:
        parts, root = urlsplit(url), urlsplit(base)
        same_origin = (parts.scheme, parts.hostname, parts.port) == (root.scheme, root.hostname, root.port)
    except ValueError:
        return False
    prefix = root.path.rstrip("/") + "/"
    return same_origin and parts.username is None and parts.path.startswith(prefix)


def declared_charset(content_type: str) -> str | None:
    for parameter in content_type.split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return None


def decoded(body: bytes, charset: str | None) -> str | None:
    """``body`` as text in ``charset`` (UTF-8 when none, or one Python does not know), or None for
    a binary file (a NUL byte, outside UTF-16 and UTF-32) or bytes that do not decode."""
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    if b"\x00" in body and not codec.startswith(MULTI_BYTE_NUL_CHARSETS):
        return None
    try:
        text = body.decode(codec)
    except UnicodeDecodeError:
        return None
    return text.removeprefix("\ufeff")


def placeholder(filename: str, why: Unread) -> str:
    """The line a text file not read stands as (``filename`` already fit for a line)."""
    if why is Unread.TOO_LARGE:
        return f"[Text file: {filename}, too large to read (over {MAX_ATTACHMENT_BYTES // 1024} KB)]"
    if why is Unread.NOT_TEXT:
        return f"[File Attachment: {filename}, not readable as text]"
    if why is Unread.OVER_BUDGET:
        return f"[Text file: {filename}, not read: this turn already read as much of files as it may]"
    return f"[Text file: {filename}, could not be fetched]"


def text_block(filename: str, text: str, *, cut: bool) -> str:
    """A read file as it follows its message's words, inside the message's markers."""
    shown = (
        f"{text}…[the rest of {filename} is past what a turn reads of files]" if cut else text.rstrip("\n")
    )
    return f"[Text file: {filename}]\n{shown}\n[End of {filename}]"
