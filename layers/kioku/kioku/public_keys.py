"""The public keys the signed endpoints verify with, read straight from the environment.

A PING must be answered before anything heavier than PyNaCl loads, so this module uses the
standard library only; the full settings (`kioku.config`) are read once a request needs them.
"""

from __future__ import annotations

import os

HEX_DIGITS = frozenset("0123456789abcdef")


class ConfigurationError(RuntimeError):
    """The environment is missing a variable or holds an invalid one."""


def hex_public_key(value: str) -> str:
    """``value`` as 64 lower-case hex characters; ValueError when it is not an Ed25519 public key."""
    value = value.strip().lower()
    if len(value) != 64 or not set(value) <= HEX_DIGITS:
        raise ValueError("must be 64 hex characters (a 32-byte Ed25519 public key)")
    return value


def public_key_from_env(name: str) -> str:
    """The hex public key in the environment variable ``name``; ConfigurationError names what is wrong."""
    value = os.environ.get(name, "")
    if not value.strip():
        raise ConfigurationError(f"invalid configuration: {name} is required but not set")
    try:
        return hex_public_key(value)
    except ValueError as exc:
        raise ConfigurationError(f"invalid configuration: {name} {exc}") from None
