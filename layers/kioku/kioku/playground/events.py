"""Builders for signed Function URL events and sample interactions (tests, events/, the playground)."""

from __future__ import annotations

import base64
import copy
import json
import time
from typing import Any

from kioku.discord.interactions import InteractionType
from kioku.discord.protocol import ChannelType, CommandType, ComponentType, InteractionContext, OptionType
from kioku.signatures import sign_request


def function_url_event(
    body: bytes,
    headers: dict[str, str],
    *,
    base64_body: bool = False,
    method: str = "POST",
    path: str = "/",
) -> dict[str, Any]:
    """A Lambda Function URL payload 2.0 event, as AWS delivers it."""
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", **{k.lower(): v for k, v in headers.items()}},
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": f"local-{int(now * 1000)}",
            "timeEpoch": int(now * 1000),
        },
        "body": base64.b64encode(body).decode() if base64_body else body.decode("utf-8"),
        "isBase64Encoded": base64_body,
    }


def signed_event(
    payload: dict[str, Any] | bytes,
    signing_key_hex: str,
    *,
    timestamp: str | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    return function_url_event(body, sign_request(signing_key_hex, body, timestamp), base64_body=base64_body)


def ping(application_id: str) -> dict[str, Any]:
    return {
        "id": "1",
        "application_id": application_id,
        "type": InteractionType.PING,
        "token": "ping",
        "version": 1,
    }


def slash_command(
    application_id: str,
    name: str,
    subcommand: str | None = None,
    options: dict[str, Any] | None = None,
    *,
    guild_id: str | None = "200000000000000001",
    channel_id: str = "300000000000000001",
    parent_channel_id: str | None = None,
    user_id: str = "400000000000000001",
    username: str = "playground-user",
    global_name: str | None = None,
    interaction_id: str = "500000000000000001",
    token: str = "interaction-token",
    permissions: str = "0",
    option_types: dict[str, int] | None = None,
) -> dict[str, Any]:
    """An APPLICATION_COMMAND interaction as Discord sends it for ``/name [group] [subcommand]
    [options]``; ``subcommand`` may be a path such as ``"stm parameters"``. A channel with a
    ``parent_channel_id`` is a thread of it. An option's type is ``option_types``' or read from
    its value."""
    types = option_types or {}
    data_options = [
        {"name": k, "value": v, "type": int(types.get(k) or _option_type(v))}
        for k, v in (options or {}).items()
    ]
    path = subcommand.split() if subcommand else []
    if path:
        data_options = [{"name": path[-1], "type": OptionType.SUB_COMMAND, "options": data_options}]
    if len(path) == 2:
        data_options = [{"name": path[0], "type": OptionType.SUB_COMMAND_GROUP, "options": data_options}]
    user = {"id": user_id, "username": username, "global_name": global_name}
    payload: dict[str, Any] = {
        "id": interaction_id,
        "application_id": application_id,
        "type": InteractionType.APPLICATION_COMMAND,
        "token": token,
        "version": 1,
        "channel_id": channel_id,
        "channel": _channel(channel_id, parent_channel_id, in_guild=bool(guild_id)),
        "data": {
            "id": "600000000000000001",
            "name": name,
            "type": CommandType.CHAT_INPUT,
            "options": data_options,
        },
    }
    if guild_id:
        payload["guild_id"] = guild_id
        payload["member"] = {"user": user, "nick": None, "permissions": permissions, "roles": []}
        payload["context"] = InteractionContext.GUILD
    else:
        payload["user"] = user
        payload["context"] = InteractionContext.BOT_DM
    return payload


def message_command(
    application_id: str, name: str, target_id: str, *, target: dict[str, Any] | None = None, **where: Any
) -> dict[str, Any]:
    """An APPLICATION_COMMAND interaction as Discord sends it for a message command (a message's Apps
    menu) named ``name`` on message ``target_id`` (``target``: the message, which Discord resolves
    into the interaction); ``where`` as for ``slash_command`` (who, where)."""
    payload = slash_command(application_id, name, **where)
    payload["data"] = {
        "id": "600000000000000003",
        "name": name,
        "type": CommandType.MESSAGE,
        "target_id": target_id,
    }
    if target is not None:
        payload["data"]["resolved"] = {"messages": {target_id: target}}
    return payload


def modal_submit(command: dict[str, Any], custom_id: str, values: dict[str, str]) -> dict[str, Any]:
    """The MODAL_SUBMIT Discord sends when a person fills in the form a command answered with."""
    return {
        **command,
        "type": InteractionType.MODAL_SUBMIT,
        "data": {
            "custom_id": custom_id,
            "components": [
                {
                    "type": ComponentType.ACTION_ROW,
                    "components": [{"type": ComponentType.TEXT_INPUT, "custom_id": key, "value": value}],
                }
                for key, value in values.items()
            ],
        },
    }


def autocomplete_typing(command: dict[str, Any], option: str, typed: str) -> dict[str, Any]:
    """The autocomplete interaction Discord sends while ``option`` of ``command`` is being typed."""
    typing = copy.deepcopy(command)
    options = typing["data"].setdefault("options", [])
    while options and options[0].get("type") in (OptionType.SUB_COMMAND, OptionType.SUB_COMMAND_GROUP):
        options = options[0].setdefault("options", [])
    options[:] = [o for o in options if o.get("name") != option]
    options.append({"type": OptionType.STRING, "name": option, "value": typed, "focused": True})
    return typing | {"type": InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE}


def component_click(
    interaction: dict[str, Any], custom_id: str, *, message: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The MESSAGE_COMPONENT Discord sends when a person clicks a button: ``interaction`` says who
    clicks where (e.g. a ``slash_command`` payload: its member, permissions and channel), ``message``
    is the message the button is on."""
    payload = {
        **interaction,
        "type": InteractionType.MESSAGE_COMPONENT,
        "data": {"custom_id": custom_id, "component_type": ComponentType.BUTTON},
    }
    if message is not None:
        payload["message"] = message
    return payload


def _channel(channel_id: str, parent_id: str | None, *, in_guild: bool) -> dict[str, Any]:
    if not in_guild:
        return {"id": channel_id, "type": ChannelType.DM}
    if parent_id:
        return {"id": channel_id, "type": ChannelType.PUBLIC_THREAD, "parent_id": parent_id}
    return {"id": channel_id, "type": ChannelType.GUILD_TEXT}


def _option_type(value: Any) -> int:
    if isinstance(value, bool):
        return OptionType.BOOLEAN
    if isinstance(value, int):
        return OptionType.INTEGER
    return OptionType.STRING
