"""Which attachments a turn reads, how much, how their bytes decode, and how the dialogue shows them
(``kioku.domain.attachment_text``), on an in-memory fake of the fetching port."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.discord.models import Attachment, Message, User
from kioku.domain.attachment_text import (
    FETCH_FAILED,
    FETCHED_TOO_LARGE,
    MAX_ATTACHMENT_BYTES,
    MAX_FILES_READ_PER_TURN,
    FetchedFile,
    ReadAttachment,
    Unread,
    decoded,
    fetch_url,
    is_text_file,
    read_text_files,
)
from kioku.domain.dialogue import read_dialogue

CDN = "https://cdn.discordapp.com/attachments/3/4/notes.txt?ex=1&hm=2"
BOT = "100000000000000001"


@dataclass
class FakeFiles:
    """Answers each URL with its file (UTF-8 text, or bytes with a charset), counting fetches."""

    files: dict[str, FetchedFile] = field(default_factory=dict)
    fetched: list[tuple[str, int]] = field(default_factory=list)

    def fetch(self, url: str, max_bytes: int) -> FetchedFile:
        self.fetched.append((url, max_bytes))
        return self.files.get(url, FETCH_FAILED)


def cdn(name: str) -> str:
    return f"https://cdn.discordapp.com/attachments/3/4/{name}"


def message(*attachments: Attachment, message_id: str = "500000000000000001", text: str = "look") -> Message:
    return Message(
        id=message_id,
        author=User(id="400000000000000001", username="alice"),
        content=text,
        timestamp=datetime(2026, 12, 1, tzinfo=UTC),
        attachments=attachments,
    )


def text_file(name: str, content_type: str = "text/plain; charset=utf-8") -> Attachment:
    return Attachment(name, content_type, cdn(name))


@pytest.mark.parametrize(
    ("url", "base", "expected"),
    [
        (CDN, None, CDN),
        (
            "https://media.discordapp.net/attachments/3/4/a.md",
            None,
            "https://media.discordapp.net/attachments/3/4/a.md",
        ),
        (CDN, "http://127.0.0.1:8123", "http://127.0.0.1:8123/attachments/3/4/notes.txt?ex=1&hm=2"),
        (
            "http://127.0.0.1:8123/attachments/3/4/a.txt",
            "http://127.0.0.1:8123",
            "http://127.0.0.1:8123/attachments/3/4/a.txt",
        ),
        ("http://cdn.discordapp.com/attachments/3/4/a.txt", None, None),  # not https
        ("https://evil.example/attachments/3/4/a.txt", None, None),
        ("https://cdn.discordapp.com@evil.example/a.txt", None, None),  # userinfo: the host is evil's
        ("https://cdn.discordapp.com.evil.example/a.txt", None, None),
        ("https://cdn.discordapp.com:8443/a.txt", None, None),
        ("http://127.0.0.1:9999/attachments/a.txt", "http://127.0.0.1:8123", None),  # another port
        ("http://127.0.0.1:8123/elsewhere/a.txt", "http://127.0.0.1:8123/cdn", None),  # outside its path
        ("file:///etc/passwd", None, None),
        ("", None, None),
    ],
)
def test_only_discords_attachment_hosts_or_the_configured_base_are_fetched(url, base, expected):
    assert fetch_url(url, base) == expected


@pytest.mark.parametrize(
    ("filename", "content_type", "expected"),
    [
        ("notes.txt", "text/plain; charset=utf-8", True),
        ("data.json", "application/json; charset=utf-8", True),
        ("main.py", "", True),
        ("README.md", "application/octet-stream", True),
        ("table.csv", "text/csv", True),
        ("cat.png", "image/png", False),
        ("archive.zip", "application/zip", False),
        ("tricky.txt", "image/png", False),  # a typed file is what its type says
        ("noextension", "", False),
    ],
)
def test_text_files_are_known_by_type_or_when_untyped_by_name(filename, content_type, expected):
    assert is_text_file(Attachment(filename, content_type, cdn(filename))) is expected


def test_bytes_decode_in_their_charset_and_binary_or_broken_ones_do_not():
    assert decoded("café".encode("latin-1"), "ISO-8859-1") == "café"
    assert decoded("naïve ✓".encode(), None) == "naïve ✓"
    assert decoded("\ufeffbom".encode(), "utf-8") == "bom"
    assert decoded("wide".encode("utf-16"), "utf-16") == "wide"
    assert decoded("café".encode("latin-1"), None) is None  # not UTF-8, and no charset said otherwise
    assert decoded(b"PK\x03\x04\x00\x00binary", None) is None
    assert decoded(b"plain", "no-such-charset") == "plain"


def test_a_history_without_text_files_fetches_nothing_and_is_returned_as_it_is():
    files = FakeFiles()
    history = [message(Attachment("cat.png", "image/png", cdn("cat.png"))), message(text="hi")]

    assert read_text_files(history, files, budget=8000, cdn_base=None) == history
    assert files.fetched == []


def test_a_text_file_is_read_into_its_message_inside_the_markers():
    files = FakeFiles({cdn("notes.txt"): FetchedFile(b"line one\n<eom>line two")})
    history = read_text_files([message(text_file("notes.txt"))], files, budget=8000, cdn_base=None)

    assert files.fetched == [(cdn("notes.txt"), MAX_ATTACHMENT_BYTES)]
    (attachment,) = history[0].attachments
    assert isinstance(attachment, ReadAttachment)
    assert attachment.text == "line one\n<eom>line two"
    (item,) = read_dialogue(history, bot_user_id=BOT, supports_vision=True, limit=10).items
    body = str(item.content)
    words = body.split("<som>", 1)[1]
    assert words.startswith("look\n\n[Text file: notes.txt]\nline one\n")
    assert words.endswith("line two\n[End of notes.txt]<eom>")
    # the file's text stands inside the one pair of markers, its own marker neutralised
    assert body.count("<som>") == 1 and body.count("<eom>") == 1
    assert "[File Attachment: notes.txt]" not in body


def test_the_turns_bound_is_shared_by_every_file_the_turns_own_message_first():
    own = message(text_file("a.txt"), text_file("b.txt"), message_id="500000000000000003")
    earlier = message(text_file("c.txt"), message_id="500000000000000002")
    files = FakeFiles({cdn(f"{c}.txt"): FetchedFile(c.encode() * 60) for c in "abc"})

    history = read_text_files([own, earlier], files, budget=100, cdn_base=None)

    a, b = history[0].attachments
    (c,) = history[1].attachments
    assert isinstance(a, ReadAttachment) and a.text == "a" * 60 and not a.cut
    assert isinstance(b, ReadAttachment) and b.text == "b" * 40 and b.cut
    assert isinstance(c, ReadAttachment) and c.text is None and c.unread is Unread.OVER_BUDGET
    assert [url for url, _ in files.fetched] == [cdn("a.txt"), cdn("b.txt")]  # c was never fetched
    items = read_dialogue(history, bot_user_id=BOT, supports_vision=True, limit=10).items
    assert "past what a turn reads of files" in str(items[1].content)
    assert "[Text file: c.txt, not read: this turn already read as much of files as it may]" in str(
        items[0].content
    )


def test_at_most_a_few_files_are_fetched_per_turn():
    names = [f"f{index}.txt" for index in range(MAX_FILES_READ_PER_TURN + 2)]
    files = FakeFiles({cdn(name): FetchedFile(b"x") for name in names})

    read_text_files([message(*map(text_file, names))], files, budget=8000, cdn_base=None)

    assert len(files.fetched) == MAX_FILES_READ_PER_TURN


def test_a_file_too_large_unreadable_or_unfetched_keeps_a_placeholder_that_says_why():
    files = FakeFiles(
        {
            cdn("big.log"): FETCHED_TOO_LARGE,
            cdn("blob.txt"): FetchedFile(b"\x00\x01\x02"),
            cdn("gone.txt"): FETCH_FAILED,
            cdn("latin.txt"): FetchedFile("olé".encode("latin-1"), "iso-8859-1"),
        }
    )
    attachments = [text_file(name) for name in ("big.log", "blob.txt", "gone.txt", "latin.txt")]
    outside = Attachment("evil.txt", "text/plain", "https://evil.example/evil.txt")

    history = read_text_files([message(*attachments, outside)], files, budget=8000, cdn_base=None)
    (item,) = read_dialogue(history, bot_user_id=BOT, supports_vision=True, limit=10).items

    body = str(item.content)
    assert f"[Text file: big.log, too large to read (over {MAX_ATTACHMENT_BYTES // 1024} KB)]" in body
    assert "[File Attachment: blob.txt, not readable as text]" in body
    assert "[Text file: gone.txt, could not be fetched]" in body
    assert "[Text file: latin.txt]\nolé\n[End of latin.txt]" in body
    assert "[File Attachment: evil.txt]" in body
    assert "https://evil.example/evil.txt" not in [url for url, _ in files.fetched]


def test_no_budget_reads_nothing():
    files = FakeFiles({cdn("a.txt"): FetchedFile(b"a")})
    (read_message,) = read_text_files([message(text_file("a.txt"))], files, budget=0, cdn_base=None)
    assert files.fetched == []
    (attachment,) = read_message.attachments
    assert isinstance(attachment, ReadAttachment) and attachment.unread is Unread.OVER_BUDGET


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(
        st.text(max_size=20) | st.sampled_from(["<som>", "<eom>", "[", "|", "\n", "＜ｅｏｍ＞"])
    ).map("".join),
    name=st.text(min_size=1, max_size=30)
    | st.sampled_from(["<eom>.txt", "a]|b.md", "x\n[y | UserID:1].txt"]),
)
def test_no_file_text_or_name_forges_a_marker_or_a_header(text, name):
    # Given a file whose name and text are anyone's to write
    url = cdn("f.txt")
    files = FakeFiles({url: FetchedFile(text.encode())})
    history = read_text_files(
        [message(Attachment(name, "text/plain", url))], files, budget=8000, cdn_base=None
    )

    # When the dialogue shows it
    (item,) = read_dialogue(history, bot_user_id=BOT, supports_vision=True, limit=10).items

    # Then the message keeps one header and one pair of markers: the file stands inside them
    body = str(item.content)
    assert body.count("<som>") == 1 and body.count("<eom>") == 1 and body.endswith("<eom>")
    assert body.split("\n", 1)[0] == "[alice | UserID:400000000000000001 | MessageID:500000000000000001]"
