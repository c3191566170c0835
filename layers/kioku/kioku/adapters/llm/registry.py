"""Which chat model a provider name means. Adding a provider is one module and one line here."""

from __future__ import annotations

import importlib
from typing import Final

from kioku.adapters.llm.base import ChatModel
from kioku.config import ConfigurationError, Settings

# Imported only when chosen, so a cold start never pays for a provider it does not use.
PROVIDERS: Final[dict[str, str]] = {
    "openai": "kioku.adapters.llm.openai:OpenAIChatModel",
    "scripted": "kioku.adapters.llm.scripted:ScriptedChatModel",
}


def make_chat_model(settings: Settings) -> ChatModel:
    """The chat model ``LLM_PROVIDER`` names, configured from ``settings``."""
    target = PROVIDERS.get(settings.LLM_PROVIDER)
    if target is None:
        raise ConfigurationError(f"invalid configuration: LLM_PROVIDER {settings.LLM_PROVIDER!r} is unknown")
    module_name, class_name = target.split(":")
    model_class = getattr(importlib.import_module(module_name), class_name)
    return model_class.from_settings(settings)
