"""tests/botocore_models.py's built-in handlers (installed by the conftest): each new session holds
what botocore would have registered into it, in an emitter of its own."""

from __future__ import annotations

from typing import Any

import botocore.handlers
import botocore.hooks
import botocore.session
import pytest

from tests import botocore_models


def _registered_by_botocore() -> botocore.session.Session:
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(
            botocore.session.Session, "_register_builtin_handlers", botocore_models._register_builtin_handlers
        )
        return botocore.session.Session()


def _state(session: botocore.session.Session) -> tuple[object, object]:
    """A session's handlers by event, in order; a handler its session made (Powertools' user-agent
    initializer makes a function for each) by its name."""
    emitter = session._original_handler
    return _handlers(emitter._handlers._root), emitter._unique_id_handlers


def _handlers(node: dict[str, Any], event: str = "") -> list[tuple[str, list[object]]]:
    found = []
    if node["values"] is not None:
        found.append(
            (
                event,
                [
                    _named(handler)
                    for handler in [*node["values"].first, *node["values"].middle, *node["values"].last]
                ],
            )
        )
    for name, child in node["children"].items():
        found += _handlers(child, f"{event}.{name}")
    return found


def _named(handler: object) -> object:
    name = getattr(handler, "__qualname__", "")
    return name if "<locals>" in name else handler


def test_a_new_session_holds_the_handlers_botocore_registers_in_their_order():
    botocore.session.Session()  # the first, registered by botocore and kept
    shared = botocore.session.Session()

    assert _state(shared) == _state(_registered_by_botocore())
    assert shared._events._emitter is shared._original_handler


def test_a_sessions_handlers_are_its_own():
    first, second = botocore.session.Session(), botocore.session.Session()
    first.register("before-send.dynamodb", lambda **kwargs: None)

    assert _state(second) == _state(_registered_by_botocore())
    assert (
        len(first.get_component("event_emitter")._emitter._handlers.prefix_search("before-send.dynamodb"))
        == len(second._original_handler._handlers.prefix_search("before-send.dynamodb")) + 1
    )


def test_a_handler_added_to_botocores_list_later_is_in_every_later_session(monkeypatch):
    botocore.session.Session()

    def added(**kwargs):
        return None

    monkeypatch.setattr(
        botocore.handlers, "BUILTIN_HANDLERS", [*botocore.handlers.BUILTIN_HANDLERS, ("before-send", added)]
    )

    assert added in botocore.session.Session()._original_handler._handlers.prefix_search("before-send.sqs")


def test_a_session_given_hooks_of_its_callers_registers_into_them():
    hooks = botocore.hooks.HierarchicalEmitter()

    def own(**kwargs):
        return None

    hooks.register("before-send", own)
    session = botocore.session.Session(event_hooks=hooks)

    assert session._original_handler is hooks
    sent = hooks._handlers.prefix_search("before-send.sqs")
    assert own in sent and len(sent) > 1
