"""Typed configuration: the environment variables of INTERFACES.md, validated once per cold start.

With the standard library alone: every ``/chat`` and relayed message reads the settings, and
building them as a pydantic model cost a cold start about 160 ms of CPU (pydantic's import and the
model's schema; docs/operations.md's Cold starts). The rules, and the words of each refusal, are
what pydantic gave: a field's type is its annotation, its default and bounds its ``setting(...)``;
``model_validate``, ``model_copy`` and ``model_fields`` keep the names their callers used.
"""

import os
import re
from collections.abc import Callable, Mapping
from copy import copy
from dataclasses import dataclass, field, fields
from functools import lru_cache
from types import NoneType, UnionType
from typing import Any, ClassVar, Final, Literal, Self, get_args, get_origin

from kioku.discord.snowflake import SNOWFLAKE_PATTERN
from kioku.public_keys import ConfigurationError, hex_public_key

__all__ = ["ConfigurationError", "SecretStr", "Settings", "get_settings"]


class SecretStr:
    """A secret's value, shown as stars in a repr or a log line (as pydantic's ``SecretStr`` was)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')"

    def __str__(self) -> str:
        return "**********" if self._value else ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
"""The default of a variable that has none: it must be set."""
_TRUE: Final = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE: Final = frozenset({"0", "off", "f", "false", "n", "no"})
_WHOLE: Final = re.compile(r"([+-]?[0-9_]+)(?:\.0+)?")


@dataclass(frozen=True)
class Rule:
    """One variable's rule besides its type: its default (``REQUIRED``: none) and its bounds;
    ``check`` turns a valid string into the value kept, or raises ValueError saying why not."""

    default: Any = REQUIRED
    min_length: int | None = None
    pattern: str | None = None
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    check: Callable[[str], str] | None = None

    def is_required(self) -> bool:
        return self.default is REQUIRED


def setting(default: Any = REQUIRED, **bounds: Any) -> Any:
    return field(default=default, metadata={"rule": Rule(default, **bounds)})


class _Invalid(ValueError):
    """A value refused, in pydantic's words."""


def _number(value: object, kind: type[int] | type[float]) -> int | float:
    noun, article = ("integer", "an") if kind is int else ("number", "a")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Invalid(f"Input should be a valid {noun}")
    if isinstance(value, str):  # ASCII digits only; an integer may be written "3.0"
        whole = _WHOLE.fullmatch(value.strip()) if kind is int else None
        try:
            if not value.isascii() or (kind is int and whole is None):
                raise ValueError
            return int(whole[1]) if whole else float(value)
        except ValueError:
            raise _Invalid(
                f"Input should be a valid {noun}, unable to parse string as {article} {noun}"
            ) from None
    if kind is int and value != int(value):
        raise _Invalid("Input should be a valid integer, got a number with a fractional part")
    return kind(value)


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower() if isinstance(value, str | int) else None  # unstripped, as pydantic
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise _Invalid("Input should be a valid boolean, unable to interpret input")


def _text(value: object, rule: Rule) -> str:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str):
        raise _Invalid("Input should be a valid string")
    value = value.strip()
    if rule.min_length is not None and len(value) < rule.min_length:
        plural = "" if rule.min_length == 1 else "s"
        raise _Invalid(f"String should have at least {rule.min_length} character{plural}")
    if rule.pattern is not None and not re.search(rule.pattern, value):
        raise _Invalid(f"String should match pattern '{rule.pattern}'")
    return rule.check(value) if rule.check else value


def _bounded(number: float, rule: Rule) -> None:
    # in pydantic's order, which only a NaN (failing every bound) tells apart
    if rule.le is not None and not number <= rule.le:
        raise _Invalid(f"Input should be less than or equal to {rule.le}")
    if rule.ge is not None and not number >= rule.ge:
        raise _Invalid(f"Input should be greater than or equal to {rule.ge}")
    if rule.gt is not None and not number > rule.gt:
        raise _Invalid(f"Input should be greater than {rule.gt}")


def _valid(value: object, kind: Any, rule: Rule) -> Any:
    """``value`` read as ``kind`` (an annotation of Settings) under ``rule``, or _Invalid."""
    if isinstance(kind, UnionType):  # X | None
        if value is None:
            return None
        (kind,) = (arm for arm in get_args(kind) if arm is not NoneType)
    if get_origin(kind) is Literal:
        if value not in get_args(kind):
            raise _Invalid("Input should be " + " or ".join(f"'{choice}'" for choice in get_args(kind)))
        return value
    if kind is bool:
        return _boolean(value)
    if kind is int or kind is float:
        number = _number(value, kind)
        _bounded(number, rule)
        return number
    text = _text(value, rule)
    return SecretStr(text) if kind is SecretStr else text


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every variable a function reads. Field names are the environment variable names."""

    model_fields: ClassVar[Mapping[str, Rule]]
    """Each variable's rule, by name, in the order declared."""

    TABLE_NAME: str = setting(min_length=3)
    TURN_QUEUE_URL: str = setting(min_length=1)
    TURN_DEAD_LETTER_QUEUE_URL: str | None = None
    TURN_MAX_ATTEMPTS: int = setting(3, ge=1, le=5)
    DISCORD_APPLICATION_ID: str = setting(pattern=SNOWFLAKE_PATTERN)
    DISCORD_PUBLIC_KEY: str = setting(check=hex_public_key)
    RELAY_PUBLIC_KEY: str = setting(check=hex_public_key)
    DISCORD_BOT_TOKEN: SecretStr | None = None
    DISCORD_API_BASE_URL: str = "https://discord.com/api/v10"
    DISCORD_CDN_BASE_URL: str | None = setting(None, pattern=r"^https?://[^/?#@]+(/[^?#]*)?$")
    """Where attachment files are fetched from instead of Discord's attachment hosts (a stand-in)."""
    KIOKU_SECRET_ARN: str | None = None

    LLM_PROVIDER: Literal["openai", "scripted"] = "openai"
    LLM_BASE_URL: str = "https://api.openai.com/v1"
    LLM_MODEL: str | None = None
    LLM_API_KEY: SecretStr | None = None
    LLM_SUPPORTS_TOOLS: bool = True
    LLM_SUPPORTS_VISION: bool = True
    LLM_TIMEOUT_SECONDS: float = setting(60.0, gt=0, le=600)
    LLM_MAX_TOKENS: int = setting(1500, ge=16, le=32_000)
    MAX_REPLY_MESSAGES: int = setting(3, ge=1, le=10)
    MAX_TOOL_CALLS_PER_TURN: int = setting(6, ge=0, le=50)
    TURN_RATE_LIMIT_PER_MINUTE: int = setting(10, ge=1, le=1000)
    MAX_IMAGES_PER_REQUEST: int = setting(4, ge=0, le=50)
    MAX_PERSONAS_PER_SERVER: int = setting(5, ge=1, le=25)
    EMBEDDINGS_MODEL: str | None = None
    EMBEDDINGS_BASE_URL: str | None = None
    EMBEDDINGS_BACKFILL_PER_RUN: int = setting(200, ge=0, le=5000)
    """Memories saved without a vector that one janitor run embeds, at most."""

    DIALOGUE_HISTORY_LIMIT: int = setting(10, ge=1, le=100)
    MAX_ATTACHMENT_TEXT_CHARS: int = setting(8000, ge=0, le=100_000)
    """Characters of text files a turn reads into their messages, across every file; 0 reads none."""

    SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT: int = setting(6, ge=0, le=50)
    SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS: int = setting(3, ge=0, le=20)
    SHORT_TERM_MEMORY_TTL_HOURS: float = setting(12, gt=0)
    SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS: float = setting(24, gt=0)
    SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH: int = setting(1500, ge=100, le=4000)
    SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL: int = setting(10, ge=1, le=50)
    STM_MAX_CATEGORIES: int = setting(5, ge=1, le=5)  # the categories form: one modal, five inputs
    STM_JANITOR_RETENTION_DAYS: int = setting(90, ge=1)
    SERVER_DATA_GRACE_DAYS: int = setting(30, ge=1, le=3650)
    STM_FRESH_WINDOW_MINUTES: float = setting(60, ge=0)
    STM_FRESH_INJECTION_DEPTH: int = setting(2, ge=0)
    MAX_SERVER_MEMORIES: int = setting(100, ge=1, le=1000)
    MAX_PERSONAL_MEMORIES: int = setting(100, ge=1, le=1000)
    MAX_MEMORY_LENGTH: int = setting(1000, ge=10, le=4000)
    LTM_RECALL_BUDGET_CHARS: int = setting(8000, ge=500, le=100_000)

    AWS_LAMBDA_FUNCTION_NAME: str | None = None
    """Set by Lambda (and `sam local`), never by the playground or the tests."""

    def __post_init__(self) -> None:
        """Each value read as its field's type under its rule (a string from the environment, or
        the value itself); ConfigurationError names every variable refused, never its value."""
        problems = []
        for one in fields(self):
            value, rule = getattr(self, one.name), Settings.model_fields[one.name]
            if value is REQUIRED:
                problems.append(f"{one.name} is required but not set")
                continue
            if value is rule.default:  # a default is kept as written (pydantic did not validate it)
                continue
            try:
                object.__setattr__(self, one.name, _valid(value, one.type, rule))
            except ValueError as exc:  # _Invalid, or a check's own sentence
                problems.append(f"{one.name} {exc}")
        if not problems:
            problems = self._scripted_model_only_off_lambda()
        if problems:
            raise ConfigurationError("invalid configuration: " + "; ".join(problems))

    def _scripted_model_only_off_lambda(self) -> list[str]:
        # the layer does not ship it (layers/kioku/Makefile): a function would fail at its first turn
        if self.LLM_PROVIDER == "scripted" and self.AWS_LAMBDA_FUNCTION_NAME:
            return [
                "LLM_PROVIDER scripted is the playground's offline model, which a deployed function does "
                "not have: unset LLM_PROVIDER (openai, any OpenAI-compatible server)"
            ]
        return []

    @property
    def embeddings_choice(self) -> Literal["embedded", "none", "endpoint"]:
        """``EMBEDDINGS_MODEL`` unset: the embedded model; ``none``: no embeddings (ranking by words);
        any other value: that model of an outside endpoint."""
        if not self.EMBEDDINGS_MODEL:
            return "embedded"
        return "none" if self.EMBEDDINGS_MODEL.lower() == "none" else "endpoint"

    @classmethod
    def model_validate(cls, values: Mapping[str, Any]) -> Self:
        """The settings of ``values`` by variable name; names that are none of ours are ignored."""
        return cls(**{name: value for name, value in values.items() if name in cls.model_fields})

    def model_copy(self, *, update: Mapping[str, Any]) -> Self:
        """These settings with ``update``'s values as given (not validated, as pydantic's was not)."""
        copied = copy(self)
        for name, value in update.items():
            object.__setattr__(copied, name, value)
        return copied

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Self:
        env = os.environ if environ is None else environ
        return cls.model_validate({name: env[name] for name in cls.model_fields if env.get(name, "").strip()})


Settings.model_fields = {one.name: one.metadata.get("rule") or Rule(one.default) for one in fields(Settings)}


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this container, read from the environment on first use."""
    return Settings.from_environ()
