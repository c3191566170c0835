"""Bursts in the privacy worlds: the messages sent after a turn's before it runs, and what a turn of
an ``always`` channel may take of them (``domain/bursts.py``).

A turn's plan lists its later messages (``privacy_world.Later``): the speaker's own in the same
channel (some already answered), someone else's there, the speaker calling Luna by name, the
speaker elsewhere (another channel, another guild, their DM), the bot's and another webhook's posts.
Each holds a token of its own. The oracle here is written from the rule alone: a turn in an always
channel covers the leading run of the speaker's own unanswered messages there to the turn's
persona (up to the dialogue's room), nothing else; ``check`` proves that the turn's covered
records, what its model was shown and what short-term memory keeps say exactly that, and that each
covered message's own job then ends as done, posting nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.keys import turn_record_key
from kioku.adapters.dynamodb.stm_items import entry_from_item
from kioku.adapters.dynamodb.table import KiokuTable, from_wire
from kioku.adapters.dynamodb.turn_ledger import COVERED_BY
from kioku.discord.models import parse_message
from kioku.domain.models import Persona
from kioku.domain.stm.entries import StmEntry
from kioku.domain.turn import TurnEnd
from kioku.domain.turn_jobs import PersonaCue, TurnJob, TurnSource, record_id_of
from kioku.services.turn import TurnService
from tests.integration.privacy_world import (
    BOT_ID,
    BOT_NAME,
    FakeDiscord,
    Kind,
    Later,
    TurnPlan,
    User,
    Where,
    World,
    Written,
    _snowflake,
)

SAME_CHANNEL: Final = frozenset(
    {Later.SAME, Later.ANSWERED, Later.OTHER_AUTHOR, Later.OTHER_PERSONA, Later.BOT, Later.WEBHOOK}
)
FOREIGN_WEBHOOK: Final = _snowflake(910_000_000_000_000_000, 999)
"""A webhook kioku did not create (another integration's)."""


@dataclass(frozen=True)
class Queued:
    """A message sent after the turn's: its kind, token, where and by whom, as Discord holds it."""

    kind: Later
    token: str
    where: Where
    author_id: str
    message: dict[str, Any]
    persona_id: str | None = None
    """The alter persona it calls by name (None: the main persona's, in an always channel)."""


def relayed(message: dict[str, Any], cue: PersonaCue | None, world: World) -> TurnJob:
    """The turn of ``message`` as RelayFunction queues it: marked ``always`` in an always channel."""
    return TurnJob.from_message(
        parse_message(message),
        cue,
        always=message.get("guild_id") is not None and message["channel_id"] in world.always,
    )


def queue_later(
    discord: FakeDiscord,
    table: KiokuTable,
    world: World,
    plan: TurnPlan,
    speaker: User,
    now: datetime,
    new_token: Callable[[Kind], str],
) -> list[Queued]:
    """Send ``plan.later`` after the turn's message (a kind with no place in this world is skipped);
    an answered one gets the record its own turn would have left."""
    queued: list[Queued] = []
    for kind in plan.later:
        token = new_token(Kind.MESSAGE)
        sent = _send(discord, world, plan, speaker, kind, f"more {token}", now)
        if sent is None:
            continue
        where, author_id, message = sent
        if kind is Later.ANSWERED:
            record = turn_record_key(TurnSource.MESSAGE.value, record_id_of(message["id"], _persona(plan)))
            table.put({**record.as_item(), "reply_ids": [], "apologised": False})
        called = world.guild(where.guild_id).alters[0].persona_id if kind is Later.OTHER_PERSONA else None
        queued.append(Queued(kind, token, where, author_id, message, called))
    return queued


def _send(
    discord: FakeDiscord,
    world: World,
    plan: TurnPlan,
    speaker: User,
    kind: Later,
    text: str,
    now: datetime,
) -> tuple[Where, str, dict[str, Any]] | None:
    where = plan.where
    if kind in (Later.SAME, Later.ANSWERED):
        return where, speaker.user_id, discord.user_says(speaker, where, text, now)
    if kind is Later.OTHER_AUTHOR:
        other = next((u for u in world.users if u != speaker and where.guild_id in u.guild_ids), None)
        return (where, other.user_id, discord.user_says(other, where, text, now)) if other else None
    if kind is Later.OTHER_PERSONA:
        alters = world.guild(where.guild_id).alters if where.guild_id else ()
        called = f"{alters[0].name}, {text}" if alters else None
        return (where, speaker.user_id, discord.user_says(speaker, where, called, now)) if called else None
    if kind in (Later.OTHER_CHANNEL, Later.ELSEWHERE):
        places = [
            place
            for place in world.places_of(speaker)
            if place.channel_id != where.channel_id
            and (place.guild_id == where.guild_id) == (kind is Later.OTHER_CHANNEL)
        ]
        place = places[0] if places else None
        return (place, speaker.user_id, discord.user_says(speaker, place, text, now)) if place else None
    author = {"id": BOT_ID, "username": BOT_NAME, "bot": True}
    if kind is Later.WEBHOOK:
        author = {"id": FOREIGN_WEBHOOK, "username": "hook", "bot": True}
    message = {
        "id": discord._new_id(now),
        "channel_id": where.channel_id,
        "author": author,
        "content": text,
        "timestamp": now.isoformat(),
        "type": 0,
        "embeds": [],
        **({"webhook_id": FOREIGN_WEBHOOK} if kind is Later.WEBHOOK else {}),
    }
    discord.messages.setdefault(where.channel_id, []).append(message)
    return where, str(author["id"]), message


def _persona(plan: TurnPlan) -> str | None:
    return plan.persona.persona_id if plan.persona else None


def expected_covered(world: World, plan: TurnPlan, queued: Sequence[Queued], room: int) -> list[Queued]:
    """What the turn answers too, by the rule: in an always channel (whose persona is the main one),
    the leading run of the speaker's own unanswered messages to the turn's persona (a plain message
    is the main one's, "Luna, …" Luna's) among the first ``room`` sent there since; the run stops at
    anything else said there (someone else's turn, a call of another persona, the bot's or a
    webhook's post, an answered message)."""
    if plan.where.guild_id is None or plan.where.channel_id not in world.always:
        return []
    run: list[Queued] = []
    for q in [q for q in queued if q.where == plan.where and q.kind in SAME_CHANNEL][:room]:
        if q.kind not in (Later.SAME, Later.OTHER_PERSONA) or q.persona_id != _persona(plan):
            break
        run.append(q)
    return run


def shown_dialogue(
    message: dict[str, Any], fetched: Sequence[dict[str, Any]], covered: Sequence[Queued], limit: int
) -> list[dict[str, Any]]:
    """The dialogue a turn was shown, newest first: what it covers, its own message and the
    ``limit - 1`` messages fetched before it (what was said after the newest covered one is cut),
    up to its ``limit``th message that is no embed-only post of the bot's (a memory notice, which the
    dialogue leaves out: an always channel's turn fetches more than it shows, so past a notice its
    dialogue reaches one message further back)."""
    seen = {m["id"]: m for m in fetched}
    earlier = [m for m in seen.values() if int(m["id"]) < int(message["id"])][: limit - 1]
    shown: list[dict[str, Any]] = []
    for m in [*(q.message for q in reversed(covered)), message, *earlier]:
        if len([s for s in shown if not _notice(s)]) == limit:
            break
        shown.append(m)
    return shown


def _notice(message: dict[str, Any]) -> bool:
    return bool(message["author"].get("bot") and not message.get("content") and message.get("embeds"))


def check(
    service: TurnService,
    table: KiokuTable,
    world: World,
    turn: TurnJob,
    queued: Sequence[Queued],
    covered: Sequence[Queued],
    seen: set[str],
    asked: Callable[[], int],
    number: int,
) -> list[str]:
    """After ``turn``: it recorded exactly ``covered`` as its own (COVERED); its model saw every
    covered message and none of the other later ones (BURST_LEAK, BURST_MISSING); short-term memory
    keeps a later message's words only if covered, in the turn's own row (BURST_STORED); and each
    covered message's own job ends as done, asking the model (``asked``: its requests so far) and
    posting nothing (REANSWERED)."""
    problems: list[str] = []
    at = f"turn {number}"
    persona_id = turn.persona.persona_id if turn.persona else None
    for q in queued:
        record_id = record_id_of(q.message["id"], persona_id)
        by = (table.get(turn_record_key(TurnSource.MESSAGE.value, record_id)) or {}).get(COVERED_BY)
        if by != (turn.record_id if q in covered else None):
            problems.append(f"COVERED at {at}: {q.kind} {q.token} recorded as covered by {by}")
        if q in covered and q.token not in seen:
            problems.append(f"BURST_MISSING at {at}: the turn was not shown the covered {q.token}")
        if q not in covered and q.token in seen:
            problems.append(f"BURST_LEAK at {at}: the turn was shown {q.kind} {q.token}")
    problems += _check_stored(table, turn, queued, covered, at)
    discord: FakeDiscord = service.discord  # type: ignore[assignment]
    for q in covered:
        before, posts = asked(), sum(map(len, discord.messages.values()))
        record = service.run(relayed(q.message, turn.persona, world))
        if (
            record.end is not TurnEnd.ALREADY_DONE
            or asked() != before
            or sum(map(len, discord.messages.values())) != posts
        ):
            problems.append(f"REANSWERED at {at}: the covered {q.token}'s own job ended {record.end}")
    return problems


def _check_stored(
    table: KiokuTable, turn: TurnJob, queued: Sequence[Queued], covered: Sequence[Queued], at: str
) -> list[str]:
    """A later message's token is kept only if covered, and only in the turn's own row (its channel,
    its persona)."""
    problems = []
    for row in stm_rows(table):
        kept = " ".join([*(line.text for line in row.crude), row.summary or ""])
        persona_id = turn.persona.persona_id if turn.persona else Persona().persona_id
        own = row.address.channel_id == turn.channel_id and row.address.persona_id == persona_id
        for q in queued:
            if q.token in kept and not (q in covered and own):
                problems.append(f"BURST_STORED at {at}: {q.kind} {q.token} kept in {row.address}")
    return problems


def stm_rows(table: KiokuTable) -> list[StmEntry]:
    """Every short-term memory row in the table."""
    items = table.client.scan(TableName=table.name)["Items"]
    rows = [entry_from_item(from_wire(item)) for item in items if item["pk"]["S"].startswith("STM#")]
    return [row for row in rows if row is not None]


def written_of(plan: TurnPlan, queued: Sequence[Queued], covered: Sequence[Queued]) -> list[Written]:
    """The later messages' tokens as the checks of later turns know them: a covered message's is
    kept with the turn's lines (in its row), the others are kept nowhere."""
    voice = {"persona": plan.persona_id, "lineage": plan.lineage}
    return [
        Written(
            q.token,
            Kind.MESSAGE,
            q.where if q not in covered else plan.where,
            q.author_id,
            stored=q in covered,
            **voice,
        )
        for q in queued
    ]
