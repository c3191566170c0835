"""An offline, deterministic chat model for the playground and the tests.

It follows a fixed script, so a whole turn (memory tools included) runs without a network, and
reads the request the way a real model is asked to:

1. When ``update_short_term_memory`` is offered and the cadence nudge is in the request (a message
   outside the dialogue that names the tool and is not a memory block), and the tool has not been
   answered yet: call it with a short summary of the conversation (or one text per category).
2. Else, when the last user message asks to remember something and ``create_long_term_memory`` is
   offered and not yet called: call it with the fact, as the tool asks: about the speaker
   (``target_user`` and ``{user}`` for "I"/"my") when they talk about themself, else server-wide.
3. Else: answer the last user message in a sentence that quotes it (so tests can see what the
   model saw), saying what its memory tools did this turn.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Final

from kioku.adapters.llm.base import ChatRequest, ChatResponse, ToolCall
from kioku.config import Settings
from kioku.domain.stm.context import MEMORY_BLOCK_OPENERS
from kioku.domain.stm.update_tool import CATEGORY_PARAMETER_SUFFIX, SUMMARY_FIELD
from kioku.domain.text import END_OF_MESSAGE, START_OF_MESSAGE

SCRIPTED_MODEL_NAME: Final = "scripted"
STM_TOOL: Final = "update_short_term_memory"
LTM_TOOL: Final = "create_long_term_memory"
SERVER_WIDE_SCOPE: Final = "server_wide"
TARGET_USER_SCOPE: Final = "target_user"
ECHO_PREFIX: Final = "[scripted]"
MAX_ECHO_CHARS: Final = 1500
MAX_QUOTE_CHARS: Final = 80
DEFAULT_SUMMARY_CHARS: Final = 500
SUMMARY_MESSAGES: Final = 8
TOPIC_WORDS: Final = 3

_MARKED = re.compile(re.escape(START_OF_MESSAGE) + r"(.*?)" + re.escape(END_OF_MESSAGE), re.DOTALL)
_SPEAKER = re.compile(r"^\[([^|\]\n]+?)\s*\|")
_WORD = re.compile(r"[^\W\d_][\w'-]{3,}")
_ADDRESS = re.compile(r"^\s*(?:<@!?\d+>|@?kioku\b)[\s,:!]*", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:I'm|I am|I've|I have|I|my|mine|me|myself)\b", re.IGNORECASE)
_ABOUT_ONESELF = re.compile(r"^(?:私|僕|俺|わたし)")
_AS_SPEAKER: Final = {
    "i'm": "{user} is",
    "i am": "{user} is",
    "i've": "{user} has",
    "i have": "{user} has",
    "i": "{user}",
    "my": "{user}'s",
    "mine": "{user}'s",
    "me": "{user}",
    "myself": "{user}",
}
_GREETING = re.compile(r"\b(hi|hello|hey|good (morning|evening)|こんにちは)\b", re.IGNORECASE)
_REMEMBER = (
    re.compile(r"\b(?:please\s+)?remember(?:\s+that)?[\s:,]+(?P<fact>.+)", re.IGNORECASE | re.DOTALL),
    re.compile(r"\b(?:don'?t|do\s+not)\s+forget(?:\s+that)?[\s:,]+(?P<fact>.+)", re.IGNORECASE | re.DOTALL),
    re.compile(r"(?P<fact>.+?)(?:ってこと|ことを|と|を|って)?覚えておいて", re.DOTALL),
)
_STOPWORDS: Final = frozenset(
    [
        "about",
        "after",
        "again",
        "also",
        "been",
        "before",
        "being",
        "could",
        "does",
        "doing",
        "done",
        "from",
        "have",
        "having",
        "here",
        "just",
        "know",
        "like",
        "make",
        "many",
        "more",
        "most",
        "much",
        "need",
        "only",
        "other",
        "over",
        "please",
        "really",
        "said",
        "same",
        "should",
        "some",
        "such",
        "sure",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "thing",
        "think",
        "this",
        "those",
        "very",
        "want",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "with",
        "would",
        "your",
        "yours",
        "kioku",
        "remember",
        "forget",
    ]
)


class ScriptedChatModel:
    """A ``ChatModel`` whose answer is a pure function of the request."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ScriptedChatModel:
        return cls()

    def complete(self, request: ChatRequest) -> ChatResponse:
        offered = {_tool_name(tool) for tool in request.tools}
        called = _called_tools(request.messages)
        if (
            STM_TOOL in offered
            and STM_TOOL not in _answered_tools(request.messages)
            and _nudged(request.messages)
        ):
            schema = _tool_parameters(request.tools, STM_TOOL)
            return _tool_response(request, STM_TOOL, _memory_arguments(schema, _dialogue(request.messages)))
        said = _last_user_text(request.messages)
        fact = _fact_to_remember(said)
        if fact and LTM_TOOL in offered and LTM_TOOL not in called:
            return _tool_response(request, LTM_TOOL, _memory_to_save(fact, said or ""))
        return _text_response(_reply(request.messages))


def _memory_to_save(fact: str, said: str) -> dict[str, str]:
    """A fact the speaker tells about themself ("my…", "I…") is theirs, written with ``{user}``
    as the tool asks; any other is the server's."""
    speaker = _SPEAKER.match(said)
    if speaker is None or not (_FIRST_PERSON.search(fact) or _ABOUT_ONESELF.match(fact)):
        return {"memory_scope": SERVER_WIDE_SCOPE, "memory_content": fact}
    content = _ABOUT_ONESELF.sub("{user}", _FIRST_PERSON.sub(lambda m: _AS_SPEAKER[m[0].lower()], fact))
    return {
        "memory_scope": TARGET_USER_SCOPE,
        "target_user": speaker.group(1).split(" (", 1)[0],
        "memory_content": content,
    }


def _reply(messages: list[dict[str, Any]]) -> str:
    last = _last_user_message(messages)
    if last is None:
        return f"{ECHO_PREFIX} Nothing to answer."
    text = _text_of(last)
    speaker = _SPEAKER.match(text)
    said = _spoken(text)[:MAX_ECHO_CHARS]
    who = f"{speaker.group(1)} said" if speaker else "You said"
    if said.rstrip().endswith(("?", "？")):
        opening = "Good question!"
    elif _GREETING.search(said):
        opening = "Hello!"
    else:
        opening = "I see."
    done = " ".join(_tool_outcome(name, content) for name, content in _tool_results(messages))
    return " ".join(part for part in (ECHO_PREFIX, opening, done, f'{who}: "{said}"') if part)


def _tool_outcome(name: str, content: str) -> str:
    try:
        status = str(json.loads(content).get("status", ""))
    except (ValueError, AttributeError):
        status = ""
    if name == STM_TOOL:
        return "(I refreshed my notes on this channel.)" if "success" in status else f"(notes: {status})"
    if name == LTM_TOOL:
        return (
            "I'll remember that."
            if "saved" in status and "failed" not in status
            else f"(not saved: {status})"
        )
    return f"({name}: {status})"


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    return function.get("name", "") if isinstance(function, dict) else ""


def _tool_parameters(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for tool in tools:
        if _tool_name(tool) == name:
            parameters = tool["function"].get("parameters")
            return parameters if isinstance(parameters, dict) else {}
    return {}


def _tool_names_by_call_id(messages: list[dict[str, Any]]) -> dict[Any, str]:
    return {
        call.get("id"): call.get("function", {}).get("name", "")
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict)
    }


def _called_tools(messages: list[dict[str, Any]]) -> set[str]:
    return set(_tool_names_by_call_id(messages).values())


def _answered_tools(messages: list[dict[str, Any]]) -> set[str]:
    names_by_id = _tool_names_by_call_id(messages)
    return {
        names_by_id.get(message.get("tool_call_id"), "")
        for message in messages
        if message.get("role") == "tool"
    }


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool name, result content) of every tool result in the request, in order."""
    names_by_id = _tool_names_by_call_id(messages)
    return [
        (names_by_id.get(message.get("tool_call_id")) or "tool", _text_of(message))
        for message in messages
        if message.get("role") == "tool"
    ]


def _nudged(messages: list[dict[str, Any]]) -> bool:
    """The nudge names the tool outside the dialogue; the system prompt and the memory blocks (which
    say the notes were saved with it) do not ask for it."""
    later = messages[1:] if messages and messages[0].get("role") == "system" else messages
    for message in later:
        text = _text_of(message)
        if message.get("role") not in {"user", "system"} or STM_TOOL not in text:
            continue
        if START_OF_MESSAGE in text or text.lstrip().startswith(MEMORY_BLOCK_OPENERS):
            continue
        return True
    return False


def _dialogue(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(speaker, what they said) of what people said in the dialogue, oldest first; the model's
    own turns are left out, as a person's notes would leave out their own replies."""
    said = []
    for message in messages:
        text = _text_of(message)
        if message.get("role") != "user" or START_OF_MESSAGE not in text:
            continue
        speaker = _SPEAKER.match(text)
        name = speaker.group(1) if speaker else "someone"
        said.append((name.split(" (", 1)[0], _unaddressed(_spoken(text))))
    return said[-SUMMARY_MESSAGES:]


def _unaddressed(text: str) -> str:
    """``kioku, the picnic…`` as ``the picnic…``: how someone called the bot is not what they said."""
    return _ADDRESS.sub("", text, count=1) or text


def summarise(dialogue: list[tuple[str, str]]) -> str:
    """A few sentences a person would write: who, about what, the latest word, what is open."""
    if not dialogue:
        return "Nothing has been said here yet."
    people = list(dict.fromkeys(name for name, _ in dialogue))
    who = people[0] if len(people) == 1 else ", ".join(people[:-1]) + " and " + people[-1]
    sentences = [f"{who} {'is' if len(people) == 1 else 'are'} talking"]
    names = {word for person in people for word in _words(person)}
    topics = _topics((text for _, text in dialogue), names)
    if topics:
        sentences[0] += " about " + ", ".join(topics)
    sentences[0] += "."
    name, text = dialogue[-1]
    sentences.append(f"Latest: {name} said “{_quote(text)}”.")
    open_questions = [(n, t) for n, t in dialogue if t.rstrip().endswith(("?", "？"))]
    if open_questions and open_questions[-1] != dialogue[-1]:
        asker, question = open_questions[-1]
        sentences.append(f"Still open: {asker} asked “{_quote(question)}”.")
    return " ".join(sentences)


def _topics(texts: Any, names: set[str]) -> list[str]:
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(word for word in _words(text) if word not in names)
    return [word for word, _ in counts.most_common(TOPIC_WORDS)]


def _words(text: str) -> dict[str, None]:
    """The content words of ``text`` in order, once each, a plural read as its singular (``events``
    is ``event``); ordered, so that ties between topics fall the same way in every process."""
    words = (word.lower() for word in _WORD.findall(text))
    return dict.fromkeys(
        word[:-1] if len(word) > 4 and word.endswith("s") else word
        for word in words
        if word not in _STOPWORDS
    )


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE_CHARS else text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


def _memory_arguments(schema: dict[str, Any], dialogue: list[tuple[str, str]]) -> dict[str, str]:
    """The summary for a ``summary`` field; for category fields, what was said about each category
    (words of its name or description), else an empty string, as the nudge asks."""
    properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    arguments = {}
    for name in schema.get("required") or ():
        spec: dict[str, Any] = properties[name] if isinstance(properties.get(name), dict) else {}
        if spec.get("enum"):
            arguments[name] = str(spec["enum"][0])
            continue
        limit = spec.get("maxLength") if isinstance(spec.get("maxLength"), int) else DEFAULT_SUMMARY_CHARS
        if name == SUMMARY_FIELD:
            text = summarise(dialogue)
        else:
            about = _words(f"{name} {spec.get('description', '')}").keys() - _words(CATEGORY_PARAMETER_SUFFIX)
            said = [f"{who}: {_quote(t)}" for who, t in dialogue if about & _words(t).keys()]
            text = "; ".join(said)
        arguments[name] = text[:limit]
    return arguments


def _fact_to_remember(text: str | None) -> str | None:
    if not text:
        return None
    said = _spoken(text)
    for pattern in _REMEMBER:
        match = pattern.search(said)
        if match:
            fact = match.group("fact").strip().rstrip(".!?。！")
            return fact or said
    return None


def _last_user_message(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest message someone wrote (not a nudge or a memory block placed after it)."""
    users = [message for message in messages if message.get("role") == "user"]
    spoken = [message for message in users if START_OF_MESSAGE in _text_of(message)]
    newest = spoken or users
    return newest[-1] if newest else None


def _last_user_text(messages: list[dict[str, Any]]) -> str | None:
    message = _last_user_message(messages)
    return _text_of(message) if message else None


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _spoken(text: str) -> str:
    """What was written between the markers, or the whole text when unmarked."""
    match = _MARKED.search(text)
    return (match.group(1) if match else text).strip()


def _tool_response(request: ChatRequest, name: str, arguments: dict[str, str]) -> ChatResponse:
    round_number = sum(1 for message in request.messages if message.get("tool_calls")) + 1
    call = ToolCall(
        id=f"call_{round_number}_{name}", name=name, arguments=json.dumps(arguments, ensure_ascii=False)
    )
    return _response(None, (call,))


def _text_response(text: str) -> ChatResponse:
    return _response(text, ())


def _response(content: str | None, calls: tuple[ToolCall, ...]) -> ChatResponse:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [call.to_openai() for call in calls]
    raw = {
        "object": "chat.completion",
        "model": SCRIPTED_MODEL_NAME,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }
    return ChatResponse(content=content, tool_calls=calls, raw=raw)
