"""Ed25519 request signatures, the scheme Discord uses for interactions and the relay reuses.

The signed message is ``timestamp + raw body``; the signature travels hex-encoded in
``x-signature-ed25519`` and the timestamp (Unix seconds) in ``x-signature-timestamp``.
Only PyNaCl is imported here: this module sits on the cold path of every PING.
"""

from __future__ import annotations

import time
from typing import Final

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

SIGNATURE_HEADER: Final = "x-signature-ed25519"
TIMESTAMP_HEADER: Final = "x-signature-timestamp"
SIGNATURE_HEX_LENGTH: Final = 128
HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
MAX_TIMESTAMP_DIGITS: Final = 12
"""Unix seconds until the year 33658; a longer number cannot be a timestamp (and overflows a float)."""
MAX_TIMESTAMP_AGE_SECONDS: Final = 300
MAX_TIMESTAMP_SKEW_SECONDS: Final = 60


class SignatureRejected(Exception):
    """The request is not provably from the holder of the key; ``reason`` says why (for logs)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RequestVerifier:
    """Verifies signed requests against one public key."""

    def __init__(self, public_key_hex: str, *, clock=time.time) -> None:
        self._key = VerifyKey(bytes.fromhex(public_key_hex))
        self._clock = clock

    def verify(self, body: bytes, signature_hex: str | None, timestamp: str | None) -> None:
        if not signature_hex or not timestamp:
            raise SignatureRejected("missing signature headers")
        if len(signature_hex) != SIGNATURE_HEX_LENGTH:
            raise SignatureRejected("signature has the wrong length")
        if not all(character in HEX_DIGITS for character in signature_hex):
            # bytes.fromhex would skip spaces and hand PyNaCl a short signature
            raise SignatureRejected("signature is not hex")
        signature = bytes.fromhex(signature_hex)
        if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > MAX_TIMESTAMP_DIGITS:
            raise SignatureRejected("timestamp is not Unix seconds")
        age = self._clock() - int(timestamp)
        if age > MAX_TIMESTAMP_AGE_SECONDS:
            raise SignatureRejected("timestamp is too old (possible replay)")
        if age < -MAX_TIMESTAMP_SKEW_SECONDS:
            raise SignatureRejected("timestamp is in the future")
        try:
            self._key.verify(timestamp.encode() + body, signature)
        except BadSignatureError:
            raise SignatureRejected("signature does not match") from None


def sign_request(signing_key_hex: str, body: bytes, timestamp: str | None = None) -> dict[str, str]:
    """Headers that make ``body`` verifiable; used by the relay, the playground and tests."""
    timestamp = timestamp or str(int(time.time()))
    signed = SigningKey(bytes.fromhex(signing_key_hex)).sign(timestamp.encode() + body)
    return {SIGNATURE_HEADER: signed.signature.hex(), TIMESTAMP_HEADER: timestamp}


def new_key_pair() -> tuple[str, str]:
    """A fresh (signing seed hex, public key hex) pair."""
    seed = bytes(SigningKey.generate()).hex()
    return seed, public_key_of(seed)


def public_key_of(signing_key_hex: str) -> str:
    """The hex public key that verifies what ``signing_key_hex`` signs."""
    return bytes(SigningKey(bytes.fromhex(signing_key_hex)).verify_key).hex()
