"""The playground's reading of a model request: what each message is and how deep it sits."""

from __future__ import annotations

from kioku.playground.inspect import label, rounds_of
from kioku.services.turn import TurnRecord


def message(role: str, content: str = "…", **extra) -> dict:
    return {"role": role, "content": content, **extra}


def test_each_message_gets_its_kind_and_the_number_of_dialogue_messages_after_it():
    kinds = ["system", "long-term memory", "dialogue", "short-term memory", "dialogue", "nudge", "dialogue"]
    labelled = label([message("system"), *[message("user")] * 6], kinds)
    assert [(m.kind, m.depth) for m in labelled] == [
        ("system", 3),
        ("long-term memory", 3),
        ("dialogue", 2),
        ("short-term memory", 2),
        ("dialogue", 1),
        ("nudge", 1),
        ("dialogue", 0),
    ]


def test_what_a_later_round_adds_is_a_tool_call_or_result_without_depth():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "update_short_term_memory", "arguments": "{}"},
    }
    messages = [
        message("system"),
        message("user", "hi"),
        message("assistant", None, tool_calls=[call]),
        message("tool", '{"status": "success"}', tool_call_id="c1"),
    ]
    record = TurnRecord(requests=[{"messages": messages, "tools": []}], context_kinds=["system", "dialogue"])
    (only,) = rounds_of(record)
    assert [(m.kind, m.depth) for m in only.messages] == [
        ("system", 1),
        ("dialogue", 0),
        ("tool call", None),
        ("tool result", None),
    ]
    assert only.messages[2].tool_calls == ("update_short_term_memory({})",)
    assert only.messages[2].text == ""
    assert only.messages[1].text == "hi"


def test_image_parts_read_as_their_url():
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
    ]
    (labelled,) = label([message("user", parts)], ["dialogue"])
    assert labelled.text == "look\n[image_url https://x/cat.png]"
