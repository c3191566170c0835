"""A stand-in for RelayFunction on 127.0.0.1: verifies each Ed25519 signature, records, answers as scripted."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from kioku.signatures import SIGNATURE_HEADER, TIMESTAMP_HEADER, RequestVerifier, SignatureRejected
from tests.e2e.fake_gateway import LOOPBACK, LoopbackLoop

RELAY_PATH: Final = "/relay"
ACCEPTED: Final = 202
UNAUTHORIZED: Final = 401


@dataclass(frozen=True, slots=True)
class Answer:
    """One scripted answer: a status, headers, and how long to take."""

    status: int = ACCEPTED
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class Delivery:
    body: bytes
    verified: bool
    status: int
    content_type: str | None
    arrived_at: float  # time.monotonic()

    @property
    def envelope(self) -> dict[str, Any]:
        return json.loads(self.body)


class RelayReceiver:
    """Answers ``script`` in order, then ``default`` for ever; 401 (unscripted) when a signature fails."""

    def __init__(self, loop: LoopbackLoop, public_key_hex: str) -> None:
        self._loop = loop
        self._verifier = RequestVerifier(public_key_hex)
        self.script: list[Answer] = []
        self.default = Answer()
        self.deliveries: list[Delivery] = []
        app = web.Application()
        app.router.add_post(RELAY_PATH, self._receive)
        self._runner, port = loop.serve(app)
        self.url = f"http://{LOOPBACK}:{port}{RELAY_PATH}"

    def close(self) -> None:
        self._loop.call(self._runner.cleanup())

    @property
    def accepted(self) -> list[dict[str, Any]]:
        """The envelopes answered 2xx, in arrival order."""
        return [d.envelope for d in self.deliveries if 200 <= d.status < 300]

    async def _receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            self._verifier.verify(
                body, request.headers.get(SIGNATURE_HEADER), request.headers.get(TIMESTAMP_HEADER)
            )
        except SignatureRejected:
            verified, answer = False, Answer(UNAUTHORIZED)
        else:
            verified, answer = True, self.script.pop(0) if self.script else self.default
        # Recorded on arrival, before any scripted delay: a test can see what is in flight.
        self.deliveries.append(
            Delivery(body, verified, answer.status, request.headers.get("content-type"), time.monotonic())
        )
        if answer.delay:
            await asyncio.sleep(answer.delay)
        return web.Response(status=answer.status, headers=answer.headers)
