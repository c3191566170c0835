"""The bot token and the LLM key: from the environment locally, from Secrets Manager when deployed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast

from kioku.config import ConfigurationError, Settings

SECRET_FIELDS = ("DISCORD_BOT_TOKEN", "LLM_API_KEY")
"""What kioku reads of the template's secret; any other field is ignored."""
SECRET_CACHE_SECONDS = 300


@dataclass(frozen=True, slots=True)
class Secrets:
    discord_bot_token: str
    llm_api_key: str | None

    def __repr__(self) -> str:
        return "Secrets(<hidden>)"


def load_secrets(settings: Settings) -> Secrets:
    """Environment values win (local runs, tests, sam local); otherwise the template's secret."""
    token = settings.DISCORD_BOT_TOKEN.get_secret_value() if settings.DISCORD_BOT_TOKEN else None
    llm_key = settings.LLM_API_KEY.get_secret_value() if settings.LLM_API_KEY else None
    if token and (llm_key or settings.LLM_PROVIDER != "openai"):
        return Secrets(token, llm_key)
    if not settings.KIOKU_SECRET_ARN:
        raise ConfigurationError(
            "invalid configuration: DISCORD_BOT_TOKEN (and LLM_API_KEY for LLM_PROVIDER=openai) "
            "must be set, or KIOKU_SECRET_ARN must name the secret holding them"
        )
    from aws_lambda_powertools.utilities.parameters import get_secret

    stored = _secret_fields(get_secret(settings.KIOKU_SECRET_ARN, max_age=SECRET_CACHE_SECONDS))
    if not (token or stored.get("DISCORD_BOT_TOKEN")):
        raise ConfigurationError(
            "invalid configuration: the KIOKU_SECRET_ARN secret has no DISCORD_BOT_TOKEN"
        )
    return Secrets(token or stored["DISCORD_BOT_TOKEN"], llm_key or stored.get("LLM_API_KEY"))


def read_secret(secret_arn: str) -> dict[str, str]:
    """The fields of the template's secret, read once in the secret's own region: what operator
    tools (``register-commands``, ``doctor``) use instead of a token on their command line."""
    from aws_lambda_powertools.utilities.parameters import SecretsProvider
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
    from botocore.config import Config

    parts = secret_arn.split(":")
    if len(parts) < 7 or parts[2] != "secretsmanager":
        raise ConfigurationError("invalid configuration: KIOKU_SECRET_ARN is not a Secrets Manager ARN")
    provider = SecretsProvider(boto_config=Config(region_name=parts[3]))
    try:
        secret = provider.get(secret_arn, max_age=0)
    except GetParameterError as exc:
        reason = str(exc).split(":")[0]  # botocore's error name and operation, never the secret
        raise ConfigurationError(
            f"the secret could not be read ({reason}): check the ARN and credentials"
        ) from None
    return _secret_fields(cast("str | bytes | None", secret))  # no transform asked: the stored string


def _secret_fields(secret: str | bytes | None) -> dict[str, str]:
    """The ``SECRET_FIELDS`` the secret's JSON object holds (a null one is left out)."""
    try:
        stored = json.loads(secret or "")
    except ValueError:
        stored = None
    if not isinstance(stored, dict):
        raise ConfigurationError("invalid configuration: the KIOKU_SECRET_ARN secret is not a JSON object")
    return {name: str(stored[name]) for name in SECRET_FIELDS if stored.get(name) is not None}
