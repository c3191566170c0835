"""tests/shared_tls.py: default httpx clients share one TLS context; any other keeps its own."""

from __future__ import annotations

import ssl

import httpx


def _context(client: httpx.Client) -> ssl.SSLContext:
    return client._transport._pool._ssl_context  # type: ignore[attr-defined]


def test_default_clients_share_one_verifying_context_and_others_keep_their_own():
    first, second = httpx.Client(), httpx.Client(timeout=5)
    unverified = httpx.Client(verify=False)
    own = ssl.create_default_context()

    assert _context(first) is _context(second)
    assert _context(first).verify_mode == ssl.CERT_REQUIRED and _context(first).check_hostname
    assert _context(unverified) is not _context(first) and _context(unverified).verify_mode == ssl.CERT_NONE
    assert _context(httpx.Client(verify=own)) is own
