"""A stand-in for Discord's attachment CDN on 127.0.0.1: the files a test (or ``:attach``) puts there,
served under the path Discord's own attachment URLs carry, so ``DISCORD_CDN_BASE_URL`` pointed here
reads them as the worker reads ``cdn.discordapp.com``."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from kioku.playground.standins import CannedResponse, RecordedRequest, _StandInServer

DISCORD_CDN: Final = "https://cdn.discordapp.com"
FIRST_ATTACHMENT_ID: Final = 1300000000000000001


@dataclass(frozen=True, slots=True)
class _File:
    data: bytes
    content_type: str
    delay_seconds: float = 0.0
    redirect_to: str | None = None


class CdnStandIn(_StandInServer):
    """``put`` a file, get the attachment object a message carries (its URL on Discord's CDN host)."""

    def __init__(self) -> None:
        super().__init__()
        self._files: dict[str, _File] = {}
        self._ids = itertools.count(FIRST_ATTACHMENT_ID)

    def put(
        self,
        filename: str,
        data: bytes,
        content_type: str = "text/plain; charset=utf-8",
        *,
        channel_id: str = "300000000000000001",
        delay_seconds: float = 0.0,
        redirect_to: str | None = None,
    ) -> dict[str, Any]:
        """Serve ``data`` as ``filename`` (after ``delay_seconds``, or as a redirect to
        ``redirect_to``); the attachment object as Discord puts it on a message."""
        attachment_id = str(next(self._ids))
        path = f"/attachments/{channel_id}/{attachment_id}/{quote(filename)}"
        with self._lock:
            self._files[path] = _File(data, content_type, delay_seconds, redirect_to)
        return {
            "id": attachment_id,
            "filename": filename,
            "content_type": content_type,
            "size": len(data),
            "url": f"{DISCORD_CDN}{path}?ex=67a0b0c0&is=679f5f40&hm=0123abcd",
        }

    def fetched(self) -> list[str]:
        """The paths fetched, in order."""
        return [request.path for request in self.requests if request.method == "GET"]

    def _answer(self, request: RecordedRequest) -> CannedResponse:
        file = self._files.get(request.path)
        if request.method != "GET" or file is None:
            return CannedResponse(404, b"Not Found")
        if file.delay_seconds:
            time.sleep(file.delay_seconds)
        if file.redirect_to is not None:
            return CannedResponse(302, b"", headers={"Location": file.redirect_to})
        return CannedResponse(200, file.data, content_type=file.content_type)
