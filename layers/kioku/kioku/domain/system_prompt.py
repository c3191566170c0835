"""The system prompt that heads every turn's context: the persona, where it is talking, the time,
and how the dialogue is written."""

from __future__ import annotations

from typing import Final

from kioku.domain.dialogue import DIALOGUE_CONVENTIONS
from kioku.domain.text import one_line_name
from kioku.domain.turn import TurnContext

DEFAULT_PERSONA_PROMPT: Final = (
    "You are {bot}, a friendly, thoughtful member of this Discord community. You remember what people "
    "tell you: short-term memory keeps the recent conversation of each channel, long-term memory keeps "
    "lasting facts. Answer naturally and briefly, as one participant in a group chat, in the language "
    "you are addressed in."
)


def system_prompt(turn: TurnContext) -> str:
    persona = turn.config.persona
    base = persona.system_prompt or DEFAULT_PERSONA_PROMPT
    where = "a direct message" if turn.is_dm else "a Discord server channel"
    bot, user = one_line_name(persona.name), one_line_name(turn.user.display_name)
    return "\n\n".join(
        part
        for part in [
            base.replace("{bot}", bot).replace("{user}", user),
            f"You are talking in {where}. The person who just addressed you is {user}. "
            f"Current time (UTC): {turn.now:%Y-%m-%d %H:%M}.",
            _nicknames(turn),
            DIALOGUE_CONVENTIONS,
        ]
        if part
    )


def _nicknames(turn: TurnContext) -> str:
    """What this persona calls the people taking part (``/persona nickname``)."""
    called = dict(turn.config.persona.nicknames)
    people = {p.user_id: p for p in (turn.user, *turn.participants)}
    pairs = [
        f"{one_line_name(people[uid].display_name)} (UserID:{uid}): {one_line_name(nick)}"
        for uid, nick in called.items()
        if uid in people
    ]
    return "You call these people by these names: " + "; ".join(pairs) + "." if pairs else ""
