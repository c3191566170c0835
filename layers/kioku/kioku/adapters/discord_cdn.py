"""Attachment files from Discord's CDN (``domain/attachment_text.py``'s ``AttachmentFiles`` port):
one GET, no redirect followed, no credentials sent, at most a byte cap and a few seconds.

Only a URL ``fetch_url`` allows is fetched (checked again here); whatever fails (a refusal, a
redirect, a timeout, a connection) is a file that could not be fetched, never an error of the turn.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from kioku import __version__
from kioku.domain.attachment_text import FETCH_FAILED, FETCHED_TOO_LARGE, FetchedFile, fetch_url

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

HTTP_OK: Final = 200
FETCH_SECONDS: Final = 5.0
"""The most one file may take, connecting included: a turn reads at most a few."""
USER_AGENT: Final = f"kioku/{__version__} (attachment reader)"


class DiscordCdn:
    """GETs attachment files; ``cdn_base`` (``DISCORD_CDN_BASE_URL``) stands in for Discord's hosts."""

    def __init__(
        self, cdn_base: str | None, *, seconds: float = FETCH_SECONDS, client: httpx.Client | None = None
    ) -> None:
        import httpx

        self._cdn_base = cdn_base
        self._seconds = seconds
        self._client = client or httpx.Client(
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
            timeout=httpx.Timeout(seconds),
            follow_redirects=False,
        )

    def close(self) -> None:
        self._client.close()

    def fetch(self, url: str, max_bytes: int) -> FetchedFile:
        import httpx

        if fetch_url(url, self._cdn_base) != url:
            logger.warning("attachment not fetched: %s is not an attachment host", urlsplit(url).hostname)
            return FETCH_FAILED
        deadline = time.monotonic() + self._seconds
        try:
            with self._client.stream("GET", url, follow_redirects=False) as response:
                if response.status_code != HTTP_OK:
                    logger.info("attachment not fetched: the CDN answered %d", response.status_code)
                    return FETCH_FAILED
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > max_bytes:
                    return FETCHED_TOO_LARGE
                body = bytearray()
                for chunk in response.iter_raw():
                    body += chunk
                    if len(body) > max_bytes:
                        return FETCHED_TOO_LARGE
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the file took too long", request=response.request)
                return FetchedFile(bytes(body), response.charset_encoding)
        except httpx.HTTPError as exc:
            logger.info("attachment not fetched: %s", exc.__class__.__name__)
            return FETCH_FAILED
