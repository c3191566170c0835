"""Discord's permission bits and message types are written once, in ``kioku.discord``; the rest of the
package names them. An AST scan of every module finds the ways they used to be re-spelled."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "kioku" / "kioku"
PROTOCOL_HOME = PACKAGE / "discord"
VIEW_CHANNEL_BIT = 10
VIEW_CHANNEL = 1 << VIEW_CHANNEL_BIT
MESSAGE_TYPE_NUMBERS = frozenset({0, 19})  # DEFAULT, REPLY
BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _names_a_type(node: ast.AST) -> bool:
    """``message.type``, ``message["type"]``, ``message.get("type")``, ``message_type``, ``kind``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "type"
    if isinstance(node, ast.Name):
        return "type" in node.id.lower() or node.id == "kind"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "type"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "type"
    return False


def _type_numbers(node: ast.AST) -> set[int]:
    """The message-type numbers a comparison's other side writes (``19``, ``{0, 19}``)."""
    candidates = node.elts if isinstance(node, ast.Set | ast.Tuple | ast.List) else [node]
    return {value for value in map(_int, candidates) if value in MESSAGE_TYPE_NUMBERS}


def spellings(source: str) -> list[str]:
    """Where ``source`` writes VIEW_CHANNEL's bit or a message type as a bare number."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.LShift)
            and (_int(node.left), _int(node.right)) == (1, VIEW_CHANNEL_BIT)
        ):
            found.append(f"line {line}: 1 << 10")
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, BITWISE)
            and VIEW_CHANNEL in (_int(node.left), _int(node.right))
        ):
            found.append(f"line {line}: {VIEW_CHANNEL} as a permission bit")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_type(side) for side in sides) and any(_type_numbers(side) for side in sides):
                found.append(f"line {line}: a message type compared with a bare number")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "type" and _int(value) == 19:
                    found.append(f"line {line}: a message's type written as 19")
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = " ".join(target.id for target in targets if isinstance(target, ast.Name)).upper()
            value = node.value
            literal = value is not None and any(_int(part) is not None for part in ast.walk(value))
            if literal and "VIEW_CHANNEL" in named:
                found.append(f"line {line}: VIEW_CHANNEL defined again")
            if literal and (("TYPE" in named and "REPLY" in named) or "MESSAGE_TYPE" in named):
                found.append(f"line {line}: a message type defined again")
            writes_19 = value is not None and any(_int(part) == 19 for part in ast.walk(value))
            if writes_19 and any(_names_a_type(target) for target in targets):
                found.append(f"line {line}: a message's type written as 19")
    return found


def modules_outside_the_protocol() -> list[Path]:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if PROTOCOL_HOME not in path.parents]


@pytest.mark.parametrize(
    "respelled",
    [
        "VIEW_CHANNEL: Final = 1 << 10",
        "class BotPermission(IntFlag):\n    VIEW_CHANNEL = 1 << 10",
        "private = bool(int(overwrite['deny']) & 1024)",
        "viewable = allow & 0x400",
        "MESSAGE_TYPE_REPLY: Final = 19",
        "DISCORD_REPLY_TYPE: Final = 19",
        "deleted = message.get('type') == 19",
        "if message.type not in {0, 19}: pass",
        "if message_type == 0: pass",
        "message['type'] = 19 if reply_to else 0",
        "posted = {'id': '1', 'type': 19}",
    ],
)
def test_the_scan_finds_each_way_the_numbers_used_to_be_respelled(respelled):
    assert spellings(respelled)


@pytest.mark.parametrize(
    "fine",
    [
        "MAX_BODY_BYTES: Final = 256 * 1024",
        "if deny & Permission.VIEW_CHANNEL: pass",
        "if message.type == MessageType.REPLY: pass",
        "flag = 1 << 19",
        "counts = {'type': 0}",
    ],
)
def test_the_scan_lets_other_numbers_be(fine):
    assert spellings(fine) == []


def test_no_module_outside_kioku_discord_respells_view_channel_or_a_message_type():
    found = {
        str(path.relative_to(PACKAGE)): spelled
        for path in modules_outside_the_protocol()
        if (spelled := spellings(path.read_text()))
    }
    assert found == {}


EMBED_COLORS = frozenset({0x5865F2, 0x57F287, 0xFEE75C, 0xED4245, 0x99AAB5})


def test_embed_colours_are_one_table_in_kioku_discord():
    """How messages look (embeds, their colours, components) is ``kioku.discord.ui``'s: no module
    elsewhere writes a colour of its own."""
    found = sorted(
        f"{path.relative_to(PACKAGE)}: line {node.lineno}"
        for path in modules_outside_the_protocol()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value in EMBED_COLORS
    )
    assert found == []


def test_only_the_slash_commands_import_the_slash_command_modules():
    """The turn pipeline and the playground take Discord's shapes from ``kioku.discord``, never from
    the slash-command package; outside it, only its registry (the definitions) and router are used."""
    importers = [
        str(path.relative_to(PACKAGE))
        for path in modules_outside_the_protocol()
        if PACKAGE / "services" / "commands" not in path.parents
        and any(
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("kioku.services.commands")
            and node.module not in ("kioku.services.commands.registry", "kioku.services.commands.router")
            for node in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert importers == []
