"""One map from errors to command answers: ``error_replies`` builds every refusal and failure."""

from __future__ import annotations

import ast
from pathlib import Path

import kioku.services.commands as commands
from kioku.services.commands import error_replies

COMMANDS = Path(commands.__file__).resolve().parent


def test_no_command_builds_a_refusal_or_a_failure_itself():
    # Given every module of the commands but the map
    builders = {}
    for path in sorted(COMMANDS.glob("*.py")):
        if path.name == "error_replies.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        # When we look for what builds a refusal or failure answer
        found = {
            node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", ""))
            in {"refusal_reply", "failure_reply", "reply_for"}
        }
        titles = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value == error_replies.FAILURE_TITLE
        }
        if found - ({"reply_for"} if path.name == "router.py" else set()) or titles:
            builders[path.name] = sorted(found | titles)
    # Then only the router hands errors to the map, and nothing else answers with one
    assert builders == {}


def test_every_refusal_has_its_own_title_and_none_reads_as_a_failure():
    titles = [reason.value for reason in error_replies.Refusal]
    assert len(set(titles)) == len(titles) and error_replies.FAILURE_TITLE not in titles
