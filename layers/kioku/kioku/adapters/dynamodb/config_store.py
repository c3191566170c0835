"""Server configuration and user profiles: one item each, read together in a turn's first request
(``StmReads.load_turn``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import server_config_key, user_profile_key
from kioku.adapters.dynamodb.table import Item, KiokuTable
from kioku.domain.models import (
    Capabilities,
    MemoryModeration,
    Persona,
    PersonaLimitReached,
    PrivacyLevel,
    RenderMode,
    ServerConfig,
    StaleConfiguration,
    StmCategory,
    StmConfig,
    UserProfile,
)
from kioku.domain.privacy import parse_overrides

PERSONA_IDS: Final = "persona_ids"
"""The ids of the server's personas, the main one too, as a string set: what a condition can test."""


class ConfigStore:
    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def get_server_config(self, guild_id: str) -> ServerConfig:
        return server_config_from_item(self._table.get(server_config_key(guild_id)), guild_id)

    def save_server_config(self, config: ServerConfig) -> ServerConfig:
        """Store ``config`` if nobody saved since it was read (its ``version``); returns the saved one."""
        return self._save_server_config(config, None)

    def save_with_persona_limit(self, config: ServerConfig, max_personas: int) -> ServerConfig:
        """``save_server_config`` for a change that adds a persona: the write is also conditional on
        the stored configuration holding fewer than ``max_personas`` personas, so two managers
        adding at once can never pass the limit. ``PersonaLimitReached`` when it is full."""
        if len(config.personas) > max_personas:
            raise PersonaLimitReached(max_personas)
        return self._save_server_config(config, max_personas)

    def _save_server_config(self, config: ServerConfig, max_personas: int | None) -> ServerConfig:
        if not config.guild_id:
            raise ValueError("a DM has no server configuration to save")
        saved = replace(config, version=config.version + 1)
        condition = "(attribute_not_exists(pk) OR #version = :read_version)"
        names, values = {"#version": "version"}, {":read_version": config.version}
        if max_personas is not None:  # the stored list holds the alter personas: the main one is always there
            condition += " AND (attribute_not_exists(#personas) OR size(#personas) < :max_alters)"
            names["#personas"], values[":max_alters"] = "personas", max_personas - 1
        try:
            self._table.put(server_config_to_item(saved), condition=condition, names=names, values=values)
        except ConditionFailed as exc:
            current = server_config_from_item(exc.old_item, config.guild_id)
            if max_personas is not None and len(current.personas) >= max_personas:
                raise PersonaLimitReached(max_personas) from exc
            raise StaleConfiguration(current) from exc
        return saved

    def get_user_profile(self, user_id: str) -> UserProfile:
        return user_profile_from_item(self._table.get(user_profile_key(user_id)), user_id)

    def save_user_profile(self, profile: UserProfile) -> UserProfile:
        saved = replace(profile, version=profile.version + 1)
        try:
            self._table.put(
                user_profile_to_item(saved),
                condition="attribute_not_exists(pk) OR #version = :read_version",
                names={"#version": "version"},
                values={":read_version": profile.version},
            )
        except ConditionFailed as exc:
            raise StaleConfiguration(user_profile_from_item(exc.old_item, profile.user_id)) from exc
        return saved


def server_config_from_item(item: Item | None, guild_id: str | None) -> ServerConfig:
    if item is None:
        return ServerConfig(guild_id=guild_id)
    capabilities = item.get("capabilities", {})
    stm = item.get("stm", {})
    defaults = StmConfig()
    return ServerConfig(
        guild_id=guild_id,
        persona=_persona_from_map(item.get("persona", {}), alter=False),
        alters=tuple(_persona_from_map(p, alter=True) for p in item.get("personas", ())),
        capabilities=Capabilities(**{k: bool(v) for k, v in capabilities.items() if k in _CAPABILITY_FLAGS}),
        channel_privacy=parse_overrides(item.get("channel_privacy")),
        stm_privacy_bypass=bool(item.get("stm_privacy_bypass", False)),
        stm=StmConfig(
            render_mode=RenderMode(stm.get("render_mode", defaults.render_mode)),
            refresh_cadence=int(stm.get("refresh_cadence", defaults.refresh_cadence)),
            crude_message_count=_optional_int(stm.get("crude_message_count")),
            nudge_injection_depth=int(stm.get("nudge_injection_depth", defaults.nudge_injection_depth)),
            content_injection_depth=int(stm.get("content_injection_depth", defaults.content_injection_depth)),
            tool_description_override=stm.get("tool_description_override"),
            update_nudge_override=stm.get("update_nudge_override"),
        ),
        categories=tuple(
            sorted(
                (
                    StmCategory(
                        slug=str(c["slug"]),
                        label=str(c["label"]),
                        description=str(c.get("description", "")),
                        position=int(c.get("position", 0)),
                    )
                    for c in item.get("categories", ())
                ),
                key=lambda category: category.position,
            )
        ),
        trigger_words=tuple(item.get("trigger_words", ())),
        answer_other_bots=bool(item.get("answer_other_bots", False)),
        always_channels={str(k): str(v) for k, v in (item.get("always_channels") or {}).items()},
        memory_moderation=_moderation(item.get("memory_moderation")),
        version=int(item.get("version", 0)),
    )


_CAPABILITY_FLAGS = frozenset(Capabilities.__dataclass_fields__)


def server_config_to_item(config: ServerConfig) -> Item:
    stm = config.stm
    return {
        **server_config_key(config.guild_id or "").as_item(),
        "persona": _persona_to_map(config.persona),
        "personas": [_persona_to_map(persona) for persona in config.alters],
        # what a turn's keep checks its alter persona is still there by (a list of maps cannot be)
        PERSONA_IDS: {persona.persona_id for persona in (config.persona, *config.alters)},
        "capabilities": {flag: getattr(config.capabilities, flag) for flag in sorted(_CAPABILITY_FLAGS)},
        "channel_privacy": {channel: mode.value for channel, mode in sorted(config.channel_privacy.items())},
        "stm_privacy_bypass": config.stm_privacy_bypass,
        "stm": _without_none(
            {
                "render_mode": stm.render_mode.value,
                "refresh_cadence": stm.refresh_cadence,
                "crude_message_count": stm.crude_message_count,
                "nudge_injection_depth": stm.nudge_injection_depth,
                "content_injection_depth": stm.content_injection_depth,
                "tool_description_override": stm.tool_description_override,
                "update_nudge_override": stm.update_nudge_override,
            }
        ),
        "categories": [
            {"slug": c.slug, "label": c.label, "description": c.description, "position": c.position}
            for c in config.categories
        ],
        "trigger_words": list(config.trigger_words),
        "answer_other_bots": config.answer_other_bots,
        "always_channels": dict(sorted(config.always_channels.items())),
        "memory_moderation": config.memory_moderation.value,
        "version": config.version,
    }


_DEFAULT_PERSONA: Final = Persona()
"""Its defaults (a slots dataclass's class attributes are its slots, not its defaults)."""


def _persona_from_map(stored: Any, *, alter: bool) -> Persona:
    return Persona(
        persona_id=str(stored.get("persona_id", _DEFAULT_PERSONA.persona_id)),
        lineage_id=int(stored.get("lineage_id", _DEFAULT_PERSONA.lineage_id)),
        name=str(stored.get("name", _DEFAULT_PERSONA.name)),
        system_prompt=str(stored.get("system_prompt", "")),
        alter=alter,
        avatar_url=stored.get("avatar_url") or None,
        trigger_words=tuple(str(word) for word in stored.get("trigger_words", ())),
        nicknames=tuple(sorted((str(k), str(v)) for k, v in stored.get("nicknames", {}).items())),
    )


def _persona_to_map(persona: Persona) -> dict[str, Any]:
    return _without_none(
        {
            "persona_id": persona.persona_id,
            "lineage_id": persona.lineage_id,
            "name": persona.name,
            "system_prompt": persona.system_prompt,
            "avatar_url": persona.avatar_url,
            "trigger_words": list(persona.trigger_words) if persona.trigger_words else None,
            "nicknames": dict(persona.nicknames) if persona.nicknames else None,
        }
    )


def user_profile_from_item(item: Item | None, user_id: str) -> UserProfile:
    if item is None:
        return UserProfile(user_id=user_id)
    return UserProfile(
        user_id=user_id,
        privacy_level=PrivacyLevel(item.get("privacy_level", PrivacyLevel.NONE)),
        cross_server_opt_in=bool(item.get("cross_server_opt_in", False)),
        version=int(item.get("version", 0)),
    )


def user_profile_to_item(profile: UserProfile) -> Item:
    return {
        **user_profile_key(profile.user_id).as_item(),
        "privacy_level": profile.privacy_level.value,
        "cross_server_opt_in": profile.cross_server_opt_in,
        "version": profile.version,
    }


def _moderation(value: Any) -> MemoryModeration:
    try:
        return MemoryModeration(value)
    except ValueError:
        return MemoryModeration.OPEN


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}
