"""The attachment fetcher (``adapters/discord_cdn.py``) against a real CDN stand-in on 127.0.0.1: one
GET without credentials, the byte cap, the timeout, no redirect followed, nothing fetched outside
the configured origin."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kioku.adapters.discord_cdn import DiscordCdn
from kioku.domain.attachment_text import Unread, fetch_url
from kioku.playground.cdn_standin import CdnStandIn


@pytest.fixture
def cdn() -> Iterator[CdnStandIn]:
    with CdnStandIn() as server:
        yield server


def local(cdn: CdnStandIn, attachment: dict) -> str:
    url = fetch_url(attachment["url"], cdn.url)
    assert url is not None
    return url


def test_a_file_is_fetched_once_with_its_charset_and_no_credentials(cdn):
    attachment = cdn.put("notes.txt", "olé".encode("latin-1"), "text/plain; charset=ISO-8859-1")

    fetched = DiscordCdn(cdn.url).fetch(local(cdn, attachment), 1024)

    assert fetched.unread is None
    assert fetched.body == "olé".encode("latin-1")
    assert fetched.charset is not None and fetched.charset.lower() == "iso-8859-1"
    (request,) = cdn.requests
    assert "authorization" not in request.headers
    assert request.query["hm"] == ["0123abcd"]  # Discord's signed URL is kept whole


def test_a_file_over_the_byte_cap_is_too_large(cdn):
    attachment = cdn.put("big.log", b"x" * 2048)

    assert DiscordCdn(cdn.url).fetch(local(cdn, attachment), 1024).unread is Unread.TOO_LARGE


def test_a_slow_file_times_out_as_failed_within_the_deadline(cdn):
    attachment = cdn.put("slow.txt", b"late", delay_seconds=3)

    started = time.monotonic()
    fetched = DiscordCdn(cdn.url, seconds=0.5).fetch(local(cdn, attachment), 1024)

    assert fetched.unread is Unread.FAILED
    assert time.monotonic() - started < 2


def test_a_redirect_is_not_followed(cdn):
    target = cdn.put("target.txt", b"secret")
    attachment = cdn.put("hop.txt", b"", redirect_to=local(cdn, target))

    assert DiscordCdn(cdn.url).fetch(local(cdn, attachment), 1024).unread is Unread.FAILED
    assert cdn.fetched() == [local(cdn, attachment).split(cdn.url, 1)[1].split("?")[0]]


def test_a_missing_file_is_failed(cdn):
    assert DiscordCdn(cdn.url).fetch(f"{cdn.url}/attachments/3/4/none.txt", 1024).unread is Unread.FAILED


def test_nothing_outside_the_configured_origin_is_fetched(cdn):
    with CdnStandIn() as elsewhere:
        attachment = elsewhere.put("evil.txt", b"nope")
        direct = local(elsewhere, attachment)  # a URL under the other server's origin

        assert DiscordCdn(cdn.url).fetch(direct, 1024).unread is Unread.FAILED
        assert DiscordCdn(None).fetch(direct, 1024).unread is Unread.FAILED
        assert elsewhere.requests == []
