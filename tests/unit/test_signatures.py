"""Ed25519 verification with real generated keys: every way a request can fail to be authentic."""

from __future__ import annotations

import pytest

from kioku.signatures import RequestVerifier, SignatureRejected, new_key_pair, public_key_of, sign_request

NOW = 1_800_000_000
BODY = b'{"type":1}'


@pytest.fixture
def keys():
    return new_key_pair()


@pytest.fixture
def verifier(keys):
    return RequestVerifier(keys[1], clock=lambda: NOW)


def signed(keys, body=BODY, timestamp=str(NOW)):
    headers = sign_request(keys[0], body, timestamp)
    return headers["x-signature-ed25519"], headers["x-signature-timestamp"]


def test_a_genuine_signature_verifies(keys, verifier):
    signature, timestamp = signed(keys)
    verifier.verify(BODY, signature, timestamp)


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda s, t, b: (None, t, b), "missing"),
        (lambda s, t, b: (s, None, b), "missing"),
        (lambda s, t, b: ("", t, b), "missing"),
        (lambda s, t, b: ("zz" + s[2:], t, b), "not hex"),
        (lambda s, t, b: (s[:-2], t, b), "wrong length"),
        (lambda s, t, b: (s + "00", t, b), "wrong length"),
        (lambda s, t, b: (("0" if s[0] != "0" else "1") + s[1:], t, b), "does not match"),
        (lambda s, t, b: (s, t, b[:-1] + b" "), "does not match"),
        (lambda s, t, b: (s, str(int(t) + 1), b), "does not match"),
        (lambda s, t, b: (s, "12ab", b), "not Unix seconds"),
        (lambda s, t, b: (s, "-5", b), "not Unix seconds"),
        (lambda s, t, b: (s, "١٢٣", b), "not Unix seconds"),
    ],
    ids=[
        "no-signature",
        "no-timestamp",
        "empty-signature",
        "non-hex",
        "short",
        "long",
        "wrong-signature",
        "body-one-byte-changed",
        "timestamp-changed",
        "timestamp-not-number",
        "timestamp-negative",
        "timestamp-non-ascii-digits",
    ],
)
def test_every_tampered_request_is_rejected(keys, verifier, mutate, reason):
    signature, timestamp = signed(keys)
    signature, timestamp, body = mutate(signature, timestamp, BODY)
    with pytest.raises(SignatureRejected, match=reason):
        verifier.verify(body, signature, timestamp)


def test_a_signature_from_another_key_is_rejected(verifier):
    other = new_key_pair()
    signature, timestamp = signed(other)
    with pytest.raises(SignatureRejected, match="does not match"):
        verifier.verify(BODY, signature, timestamp)


def test_a_stale_timestamp_is_a_replay(keys, verifier):
    old = str(NOW - 301)
    signature, timestamp = signed(keys, timestamp=old)
    with pytest.raises(SignatureRejected, match="too old"):
        verifier.verify(BODY, signature, timestamp)


def test_a_timestamp_within_five_minutes_is_accepted(keys, verifier):
    signature, timestamp = signed(keys, timestamp=str(NOW - 299))
    verifier.verify(BODY, signature, timestamp)


def test_a_timestamp_from_the_future_is_rejected(keys, verifier):
    signature, timestamp = signed(keys, timestamp=str(NOW + 120))
    with pytest.raises(SignatureRejected, match="future"):
        verifier.verify(BODY, signature, timestamp)


def test_the_public_key_of_a_seed_verifies_what_the_seed_signs():
    seed, public = new_key_pair()
    assert public_key_of(seed) == public
    signature, timestamp = signed((seed, public))
    RequestVerifier(public_key_of(seed), clock=lambda: NOW).verify(BODY, signature, timestamp)


@pytest.mark.parametrize(
    ("signature", "timestamp"),
    [
        (" ".join(["ab"] * 43)[:128], None),  # 128 characters of hex pairs and spaces
        (None, "9" * 309),  # more digits than a float holds
        (None, "1" * 13),
    ],
)
def test_odd_signatures_and_timestamps_are_rejected_not_crashes(signature, timestamp):
    # Given a genuinely signed request whose signature or timestamp header is then replaced
    signing_hex, public_hex = new_key_pair()
    headers = sign_request(signing_hex, b"{}")
    # When it is verified
    with pytest.raises(SignatureRejected):
        RequestVerifier(public_hex).verify(
            b"{}", signature or headers["x-signature-ed25519"], timestamp or headers["x-signature-timestamp"]
        )
