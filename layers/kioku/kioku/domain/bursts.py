"""Bursts in an ``always`` channel: the later messages a turn answers too.

In an ``always`` channel every member's message is a turn, each queued as its own job in the
channel's FIFO group. A turn of such a channel, when it reads the channel, also takes the messages
sent after its own that would be turns of the same persona from the same person and are not answered
yet: it *covers* them, answers them in one reply (to the newest), marks each as covered by it when
it keeps its answer (before the first post) and records each as done with its commit, so their own
jobs, delivered next, end as already done, even if it is dead-lettered mid-delivery. The run stops at the first message
that is someone else's turn (another person, another persona), at anything the bot or a webhook said
(the conversation moved on), at a message already answered, and after ``MAX_COVERED`` messages;
messages that are no turn at all (another bot's, ignored) pass as context. Pure: the turn service
reads the channel and the records, this module decides.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Final

from kioku.discord.models import Message
from kioku.domain.addressing import MAIN_PERSONA_TURN, GatewayMessage, decide_turn
from kioku.domain.models import ServerConfig

MAX_COVERED: Final = 9
"""At most this many later messages join a turn (ten messages in one reply): their records ride
in the turn's read and its commit, which DynamoDB bounds (100 keys, 100 items)."""


def later_messages(
    history: Sequence[Message], turn_id: str, bot_user_id: str, most: int = MAX_COVERED
) -> list[Message]:
    """The messages of ``history`` (newest first) sent after the turn's, oldest first: up to the first
    one the bot or a webhook posted (the bot spoke since: what follows is no longer this turn's) and
    at most ``most`` of them (and ``MAX_COVERED``: the dialogue shows every message a turn answers)."""
    later: list[Message] = []
    for message in sorted((m for m in history if int(m.id) > int(turn_id)), key=lambda m: int(m.id)):
        if message.author.id == bot_user_id or message.webhook_id or len(later) >= min(most, MAX_COVERED):
            break
        later.append(message)
    return later


def covered_run(
    later: Sequence[Message],
    *,
    guild_id: str,
    channel_id: str,
    author_id: str,
    persona_id: str | None,
    config: ServerConfig,
    bot_user_id: str,
    answered: Collection[str] = (),
) -> tuple[Message, ...]:
    """The leading run of ``later`` (oldest first) a turn of ``author_id`` spoken by ``persona_id``
    (None: the main persona) answers too: each message one RelayFunction would make a turn of that
    persona alone, by the same person, not ``answered`` already. ``config``: the server's, as stored
    (its main persona as ``persona``). Empty unless ``channel_id`` is an ``always`` channel."""
    if channel_id not in config.always_channels:
        return ()
    wanted = (persona_id or MAIN_PERSONA_TURN,)
    run: list[Message] = []
    for message in later:
        # the channel's history names neither server nor channel: the relay's message did
        relayed = replace(message, guild_id=guild_id, channel_id=channel_id)
        decision = decide_turn(GatewayMessage(relayed), bot_user_id=bot_user_id, config=config)
        if not decision.answer:
            continue  # no turn of anyone's (another bot's, ignored): context, not a message to answer
        if (
            message.author.id != author_id
            or (decision.personas or (MAIN_PERSONA_TURN,)) != wanted
            or message.id in answered
        ):
            break
        run.append(message)
    return tuple(run)


def up_to(history: Sequence[Message], newest_id: str) -> list[Message]:
    """``history`` (newest first) without what was sent after ``newest_id``: the dialogue a turn
    answering up to that message is shown."""
    return [message for message in history if int(message.id) <= int(newest_id)]
