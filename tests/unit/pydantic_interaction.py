"""The pydantic model kioku parsed an interaction with until a cold ``/chat`` dropped pydantic:
kept here, in the tests only, as the reference ``kioku.discord.interaction.parse_interaction`` must
agree with (``test_interaction_parse.py``). Its fields and validators as they were shipped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from kioku.discord.interactions import InteractionType
from kioku.discord.models import Member, User
from kioku.discord.protocol import PERMISSIONS_PATTERN
from kioku.discord.snowflake import SNOWFLAKE_PATTERN, is_snowflake

MAX_NAME_CHARS: Final = 64


def _checked_user(user: User) -> User:
    if not is_snowflake(user.id):
        raise ValueError("the user's id is not a snowflake id string")
    if len(user.username) > MAX_NAME_CHARS or len(user.global_name or "") > MAX_NAME_CHARS:
        raise ValueError(f"the user's names are longer than {MAX_NAME_CHARS} characters")
    return user


def _member_fields(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    permissions = value.get("permissions", "0")
    if not isinstance(permissions, str) or not re.fullmatch(PERMISSIONS_PATTERN, permissions):
        raise ValueError("the member's permissions are not a decimal string")
    roles = value.get("roles")
    return {
        **value,
        "permissions": int(permissions),
        "roles": [role for role in roles if is_snowflake(role)] if isinstance(roles, list) else [],
    }


def _checked_member(member: Member) -> Member:
    if member.user is None:
        raise ValueError("the member has no user")
    _checked_user(member.user)
    if len(member.nick or "") > MAX_NAME_CHARS:
        raise ValueError(f"the member's nick is longer than {MAX_NAME_CHARS} characters")
    return member


InteractionUser = Annotated[User, AfterValidator(_checked_user)]
InteractionMember = Annotated[Member, BeforeValidator(_member_fields), AfterValidator(_checked_member)]


class PartialChannel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=SNOWFLAKE_PATTERN)
    type: int | None = None
    name: str | None = Field(default=None, max_length=100)
    parent_id: str | None = Field(default=None, pattern=SNOWFLAKE_PATTERN)


class Interaction(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=SNOWFLAKE_PATTERN)
    application_id: str = Field(pattern=SNOWFLAKE_PATTERN)
    type: InteractionType
    token: str = Field(min_length=1, max_length=1024)
    data: dict[str, Any] = Field(default_factory=dict)
    guild_id: str | None = Field(default=None, pattern=SNOWFLAKE_PATTERN)
    channel_id: str | None = Field(default=None, pattern=SNOWFLAKE_PATTERN)
    channel: PartialChannel | None = None
    member: InteractionMember | None = None
    user: InteractionUser | None = None
    locale: str | None = None
    app_permissions: str | None = Field(default=None, pattern=PERMISSIONS_PATTERN)
    context: int | None = None
