"""Typed configuration: the environment variables of INTERFACES.md, validated once per cold start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from kioku.discord.snowflake import SNOWFLAKE_PATTERN
from kioku.public_keys import ConfigurationError, hex_public_key

__all__ = ["ConfigurationError", "Settings", "describe_validation_error", "get_settings"]


class Settings(BaseModel):
    """Every variable a function reads. Field names are the environment variable names."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)

    TABLE_NAME: str = Field(min_length=3)
    TURN_QUEUE_URL: str = Field(min_length=1)
    TURN_DEAD_LETTER_QUEUE_URL: str | None = None
    TURN_MAX_ATTEMPTS: int = Field(default=3, ge=1, le=5)
    DISCORD_APPLICATION_ID: str = Field(pattern=SNOWFLAKE_PATTERN)
    DISCORD_PUBLIC_KEY: str
    RELAY_PUBLIC_KEY: str
    DISCORD_BOT_TOKEN: SecretStr | None = None
    DISCORD_API_BASE_URL: str = "https://discord.com/api/v10"
    DISCORD_CDN_BASE_URL: str | None = Field(default=None, pattern=r"^https?://[^/?#@]+(/[^?#]*)?$")
    """Where attachment files are fetched from instead of Discord's attachment hosts (a stand-in)."""
    KIOKU_SECRET_ARN: str | None = None

    LLM_PROVIDER: Literal["openai", "scripted"] = "openai"
    LLM_BASE_URL: str = "https://api.openai.com/v1"
    LLM_MODEL: str | None = None
    LLM_API_KEY: SecretStr | None = None
    LLM_SUPPORTS_TOOLS: bool = True
    LLM_SUPPORTS_VISION: bool = True
    LLM_TIMEOUT_SECONDS: float = Field(default=60.0, gt=0, le=600)
    LLM_MAX_TOKENS: int = Field(default=1500, ge=16, le=32_000)
    MAX_REPLY_MESSAGES: int = Field(default=3, ge=1, le=10)
    MAX_TOOL_CALLS_PER_TURN: int = Field(default=6, ge=0, le=50)
    TURN_RATE_LIMIT_PER_MINUTE: int = Field(default=10, ge=1, le=1000)
    MAX_IMAGES_PER_REQUEST: int = Field(default=4, ge=0, le=50)
    MAX_PERSONAS_PER_SERVER: int = Field(default=5, ge=1, le=25)
    EMBEDDINGS_MODEL: str | None = None
    EMBEDDINGS_BASE_URL: str | None = None
    EMBEDDINGS_BACKFILL_PER_RUN: int = Field(default=200, ge=0, le=5000)
    """Memories saved without a vector that one janitor run embeds, at most."""

    DIALOGUE_HISTORY_LIMIT: int = Field(default=10, ge=1, le=100)
    MAX_ATTACHMENT_TEXT_CHARS: int = Field(default=8000, ge=0, le=100_000)
    """Characters of text files a turn reads into their messages, across every file; 0 reads none."""

    SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT: int = Field(default=6, ge=0, le=50)
    SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS: int = Field(default=3, ge=0, le=20)
    SHORT_TERM_MEMORY_TTL_HOURS: float = Field(default=12, gt=0)
    SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS: float = Field(default=24, gt=0)
    SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH: int = Field(default=1500, ge=100, le=4000)
    SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL: int = Field(default=10, ge=1, le=50)
    STM_MAX_CATEGORIES: int = Field(default=5, ge=1, le=5)  # the categories form: one modal, five inputs
    STM_JANITOR_RETENTION_DAYS: int = Field(default=90, ge=1)
    SERVER_DATA_GRACE_DAYS: int = Field(default=30, ge=1, le=3650)
    STM_FRESH_WINDOW_MINUTES: float = Field(default=60, ge=0)
    STM_FRESH_INJECTION_DEPTH: int = Field(default=2, ge=0)
    MAX_SERVER_MEMORIES: int = Field(default=100, ge=1, le=1000)
    MAX_PERSONAL_MEMORIES: int = Field(default=100, ge=1, le=1000)
    MAX_MEMORY_LENGTH: int = Field(default=1000, ge=10, le=4000)
    LTM_RECALL_BUDGET_CHARS: int = Field(default=8000, ge=500, le=100_000)

    AWS_LAMBDA_FUNCTION_NAME: str | None = None
    """Set by Lambda (and `sam local`), never by the playground or the tests."""

    _check_discord_key = field_validator("DISCORD_PUBLIC_KEY", "RELAY_PUBLIC_KEY")(hex_public_key)

    @model_validator(mode="after")
    def _scripted_model_only_off_lambda(self) -> Settings:
        # the layer does not ship it (layers/kioku/Makefile): a function would fail at its first turn
        if self.LLM_PROVIDER == "scripted" and self.AWS_LAMBDA_FUNCTION_NAME:
            raise ValueError(
                "LLM_PROVIDER scripted is the playground's offline model, which a deployed function does "
                "not have: unset LLM_PROVIDER (openai, any OpenAI-compatible server)"
            )
        return self

    @property
    def embeddings_choice(self) -> Literal["embedded", "none", "endpoint"]:
        """``EMBEDDINGS_MODEL`` unset: the embedded model; ``none``: no embeddings (ranking by words);
        any other value: that model of an outside endpoint."""
        if not self.EMBEDDINGS_MODEL:
            return "embedded"
        return "none" if self.EMBEDDINGS_MODEL.lower() == "none" else "endpoint"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values = {name: env[name] for name in cls.model_fields if env.get(name, "").strip() != ""}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line per bad variable, naming it; never echoes a value (it may be a secret)."""
    problems = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"])
        if error["type"] == "missing":
            reason = "is required but not set"
        elif error["type"] == "value_error":  # our own validators' sentences, without pydantic's prefix
            reason = str(error["ctx"]["error"])
        else:
            reason = error["msg"]
        problems.append(f"{name} {reason}" if name else reason)
    return "invalid configuration: " + "; ".join(problems)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this container, read from the environment on first use."""
    return Settings.from_environ()
