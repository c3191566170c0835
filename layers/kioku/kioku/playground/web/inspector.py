"""The playground behind the web page: actions run one at a time through ``Playground`` (the stack
and the playground are not thread-safe), whose turns since the start are the model requests shown,
and the page's state is read from what Discord and the table hold."""

from __future__ import annotations

import io
import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from kioku import clock
from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_reads import StmReads
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.config import get_settings
from kioku.discord.interactions import ResponseType
from kioku.discord.models import parse_message
from kioku.discord.protocol import MessageFlag
from kioku.domain.dialogue import participants_from_messages, read_dialogue
from kioku.domain.ltm.memory import (
    GLOBAL_LINEAGE,
    Memory,
    RecallReach,
    ScopeKind,
    allows_personal_memories,
)
from kioku.domain.ltm.recall import recall_subjects
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.privacy import PrivacyPolicy
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.playground import world
from kioku.playground.session import Playground
from kioku.playground.web import serialize

LOG_LENGTH: Final = 30
MAX_TEXT: Final = 2000
"""Discord's limit on a message's length."""
MAX_ANSWERS: Final = 200
REFUSED_LINES: Final = frozenset({":quit", ":q", ":exit"})
PAGE_PICKS: Final = (":as", ":in")
"""Who speaks and where is the page's choice, sent with each action."""


def _ephemeral(answer: dict[str, Any]) -> bool:
    return bool(((answer["response"].get("data") or {}).get("flags") or 0) & MessageFlag.EPHEMERAL)


class BadInput(ValueError):
    """What the page or a client sent cannot be acted on; the message says why."""


@dataclass(frozen=True)
class Room:
    key: str
    channel: world.Channel
    owner: world.Member | None = None
    """The member whose DM this is."""


def places() -> list[Room]:
    """The guild's channels, then each member's DM with kioku, by the key the API names them with."""
    guild = [Room(channel.name, channel) for channel in world.CHANNELS]
    dms = [Room(f"dm-{member.key}", world.dm_channel(member), member) for member in world.MEMBERS]
    return guild + dms


class Inspector:
    def __init__(self, playground: Playground) -> None:
        self.playground = playground
        self.stack = playground.stack
        self._actions = threading.Lock()
        self._log: deque[dict[str, Any]] = deque(maxlen=LOG_LENGTH)
        self._ids = itertools.count(1)
        self._answers: deque[dict[str, Any]] = deque(maxlen=MAX_ANSWERS)
        self._answer_ids = itertools.count(1)
        self._clicked: dict[str, Any] | None = None  # the answer whose button is being clicked
        self._form_for: tuple[str, str] | None = None  # (channel key, member key) of the open form
        self._places = {place.key: place for place in places()}
        table = KiokuTable(self.stack.resources.table_name)
        self._config = ConfigStore(table)
        self._stm = StmReads(table)
        self._ltm = DynamoMemoryStore(table)

    # -- actions ------------------------------------------------------------------------------------

    def say(self, channel: Any, member: Any, text: Any) -> dict[str, Any]:
        """``text`` said by ``member`` in ``channel``: the console's chat, the real path."""
        if not isinstance(text, str) or not text.strip():
            raise BadInput("say something: text must be a non-empty string")
        if len(text) > MAX_TEXT:
            raise BadInput(f"a Discord message holds at most {MAX_TEXT} characters")
        return self._act(channel, member, text, lambda playground: playground.chat(text.strip()))

    def command(self, channel: Any, member: Any, line: Any) -> dict[str, Any]:
        """A console line: a slash command as typed in Discord, or ``:wait``, ``:janitor``,
        ``:private #channel``, ``:public #channel``, ``:submit``, ``:click``, ``:memory``, …"""
        if not isinstance(line, str) or not line.strip().startswith(("/", ":")):
            raise BadInput("a command starts with / (a slash command) or : (a console command)")
        line = line.strip()
        if "\n" in line or len(line) > MAX_TEXT:
            raise BadInput("a command is one line of at most 2000 characters")
        name = line.split()[0]
        if name in REFUSED_LINES or name in PAGE_PICKS:
            raise BadInput(f"{name} is not for the page: pick who speaks and where beside the composer")
        return self._act(channel, member, line, lambda playground: playground.handle_line(line))

    def click(self, channel: Any, member: Any, answer: Any, button: Any) -> dict[str, Any]:
        """``member`` clicks the button whose custom_id is ``button`` on the answer ``answer`` shows."""
        shown = next((each for each in self._answers if each["id"] == answer), None)
        if shown is None or shown["channel"] != self.place(channel).key:
            raise BadInput(f"no answer {answer!r} with buttons in {channel!r}")
        rows = (shown["response"].get("data") or {}).get("components") or []
        buttons = [part for row in rows for part in row.get("components", []) if "custom_id" in part]
        picked = next((each for each in buttons if each["custom_id"] == button), None)
        if picked is None:
            raise BadInput(f"that answer has no button {button!r}")
        if picked.get("disabled"):
            raise BadInput(f"the button {picked.get('label')!r} is disabled")

        def press(playground: Playground) -> None:
            self._clicked = shown
            try:
                playground.press(playground.channel, rows, picked)
            finally:
                self._clicked = None

        return self._act(channel, member, f":click {picked.get('label', '')}", press)

    def submit(self, channel: Any, member: Any, fields: Any) -> dict[str, Any]:
        """``member`` sends the form open for them with ``fields`` (by custom_id), or closes it (None)."""
        if fields is not None and (
            not isinstance(fields, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
            or sum(len(v) for v in fields.values()) > 4 * MAX_TEXT
        ):
            raise BadInput("fields must be an object of text fields by their id")
        place, speaker = self.place(channel), self.member(member)
        if self.playground.open_form is None or self._form_for != (place.key, speaker.key):
            raise BadInput(f"no form is open for {speaker.key} in {place.key}")
        if fields is None:
            with self._actions:
                self.playground.open_form, self._form_for = None, None
            return {"ok": True, "output": "(form closed)"}
        return self._act(channel, member, ":submit", lambda playground: playground.submit_fields(fields))

    def _act(
        self, channel: Any, member: Any, line: str, action: Callable[[Playground], Any]
    ) -> dict[str, Any]:
        place, speaker = self.place(channel), self.member(member)
        if place.owner is not None and speaker != place.owner:
            raise BadInput(f"only {place.owner.key} talks in {place.key}")
        with self._actions:
            playground = self.playground
            playground.member, playground.channel = speaker, place.channel
            playground.out = io.StringIO()
            failures = playground.failures
            form = playground.open_form
            playground.on_answer = lambda payload, answer: self._keep_answer(place, speaker, line, answer)
            try:
                action(playground)
            finally:
                playground.on_answer = None
            if playground.open_form is not form:
                self._form_for = (place.key, speaker.key) if playground.open_form else None
            done = {
                "id": next(self._ids),
                "channel": place.key,
                "member": speaker.key,
                "line": line,
                "output": playground.out.getvalue().rstrip(),
                "ok": playground.failures == failures,
            }
            self._log.append(done)
            return done

    def _keep_answer(self, place: Room, speaker: world.Member, line: str, response: dict) -> None:
        """An interaction's answer, shown in the conversation where it was asked for; a button's
        UPDATE_MESSAGE rewrites the message it was clicked on, as in Discord."""
        if response.get("type") == ResponseType.UPDATE_MESSAGE:
            clicked = self._clicked or next(
                (
                    each
                    for each in reversed(self._answers)
                    if each["channel"] == place.key and each["buttons"]
                ),
                None,
            )
            if clicked is not None:
                data = {**(clicked["response"].get("data") or {}), **(response.get("data") or {})}
                clicked["response"] = {**clicked["response"], "data": data}
                clicked["buttons"] = bool(data.get("components"))
                return
        data = response.get("data") or {}
        self._answers.append(
            {
                "id": next(self._answer_ids),
                "channel": place.key,
                "member": speaker.key,
                "line": line,
                "after": len(self.stack.discord.channel_messages(place.channel.channel_id)),
                "timestamp": clock.now().isoformat(timespec="seconds"),
                "response": response,
                "buttons": bool(data.get("components")),
            }
        )

    # -- what the page shows ------------------------------------------------------------------------

    def place(self, key: Any) -> Room:
        if not isinstance(key, str) or key not in self._places:
            raise BadInput(f"no channel {key!r}: try " + ", ".join(self._places))
        return self._places[key]

    @staticmethod
    def member(key: Any) -> world.Member:
        found = world.find_member(key) if isinstance(key, str) else None
        if found is None:
            raise BadInput(f"no member {key!r}: try " + ", ".join(member.key for member in world.MEMBERS))
        return found

    def state(self, channel: Any, member: Any = "alice") -> dict[str, Any]:
        """Everything the page shows for ``channel`` to ``member`` (whose ephemeral answers and form
        are theirs alone); safe to read while an action runs."""
        place, viewer = self.place(channel), self.member(member)
        turns = list(self.playground.turns)
        turn_of_reply = {
            reply_id: number for number, turn in enumerate(turns, 1) for reply_id in turn.reply_ids
        }
        mentions = {self.stack.application_id: "kioku"} | {
            m.user_id: m.global_name or m.key for m in world.MEMBERS
        }
        mentions |= {f"#{each.channel.channel_id}": each.key for each in self._places.values()}
        messages = [
            serialize.message_json(message, turn_of_reply.get(message.get("id", "")), mentions)
            for message in self.stack.discord.channel_messages(place.channel.channel_id)
        ]
        answers = [
            each
            for each in list(self._answers)
            if each["channel"] == place.key and (each["member"] == viewer.key or not _ephemeral(each))
        ]
        for answer in reversed(answers):
            messages.insert(min(answer["after"], len(messages)), self._answer_json(answer, mentions))
        shown = sorted({message["turn"] for message in messages if message["turn"]})
        return {
            "clock": f"{clock.now():%Y-%m-%d %H:%M} UTC",
            "busy": self._actions.locked(),
            "channel": place.key,
            "channels": [self._channel_json(each) for each in self._places.values()],
            "members": [{"key": m.key, "name": m.global_name or m.username} for m in world.MEMBERS],
            "messages": messages,
            "turns": {str(number): serialize.turn_json(number, turns[number - 1]) for number in shown},
            **self._stm_rows(place),
            "ltm": self._memories(place, viewer),
            "log": list(self._log),
            "form": self._form_json(place, viewer),
        }

    def _answer_json(self, answer: dict[str, Any], mentions: dict[str, str]) -> dict[str, Any]:
        speaker = self.member(answer["member"])
        return serialize.answer_json(
            answer["id"],
            answer["response"],
            line=answer["line"],
            by=speaker.global_name or speaker.key,
            timestamp=answer["timestamp"],
            mentions=mentions,
        )

    def _form_json(self, place: Room, viewer: world.Member) -> dict[str, Any] | None:
        form = self.playground.open_form
        if form is None or self._form_for != (place.key, viewer.key):
            return None
        return serialize.form_json(form[1])

    def _channel_json(self, place: Room) -> dict[str, Any]:
        channel = self._described(place.channel)
        kind = "dm" if place.owner else "thread" if channel.parent_id else "channel"
        return {
            "key": place.key,
            "label": f"DM with {place.owner.global_name or place.owner.key}"
            if place.owner
            else channel.label,
            "kind": kind,
            "private": channel.private,
            "owner": place.owner.key if place.owner else None,
        }

    def _described(self, channel: world.Channel) -> world.Channel:
        """The channel with the permission overwrites Discord holds now (``:private`` changes them)."""
        if channel.guild_id is None:
            return channel
        overwrites = self.stack.discord.channel_info(channel.channel_id).get("permission_overwrites") or []
        return replace(channel, permission_overwrites=tuple(overwrites))

    def _stm_rows(self, place: Room) -> dict[str, Any]:
        """Each persona's row of the channel (a turn of that persona there reads it): ``stm`` the main
        persona's, or the first that has one, ``stm_others`` the rest, each named."""
        channel = place.channel
        owner = place.owner or world.MEMBERS[0]
        rows = []
        for persona in self._config_in(channel).personas:
            address = StmAddress.of(channel.guild_id, owner.user_id, channel.channel_id, persona.persona_id)
            row = serialize.stm_json(self._stm.get(address))
            if row is not None:
                rows.append(row | {"persona": persona.name, "main": not persona.alter})
        return {"stm": rows[0] if rows else None, "stm_others": rows[1:]}

    def _config_in(self, channel: world.Channel) -> ServerConfig:
        """The guild's stored configuration; a DM's is the defaults."""
        return self._config.get_server_config(world.GUILD_ID) if channel.guild_id else ServerConfig()

    def _memories(self, place: Room, viewer: world.Member) -> list[dict[str, Any]]:
        """Every long-term memory of the guild and its members, those a turn here by ``viewer`` would
        recall first (``_reach``: the rule recall itself filters by)."""
        config = self._config_in(place.channel)
        reach = self._reach(place, viewer, config)
        # every persona's lineage, each memory judged by the reach of a turn of its lineage here
        readers: dict[int, list[str]] = {}
        for persona in config.personas:
            readers.setdefault(persona.lineage_id, []).append(persona.name)
        names = (
            {world.GUILD_ID: "the server"}
            | {m.user_id: m.global_name or m.key for m in world.MEMBERS}
            | {each.channel.channel_id: each.key for each in self._places.values()}
        )
        memories: list[Memory] = list(self._ltm.memories_of(ScopeKind.SERVER, world.GUILD_ID))
        for member in world.MEMBERS:
            memories += self._ltm.memories_of(ScopeKind.PERSONAL, member.user_id)
        shown = []
        for memory in memories:
            lineage = memory.scope.lineage
            if lineage not in readers and lineage != GLOBAL_LINEAGE:
                continue  # a removed persona's: no turn recalls it
            personas = readers.get(lineage, [p.name for p in config.personas])
            in_scope = any(
                replace(reach, lineage=each).shows(memory)
                for each in ([lineage] if lineage in readers else list(readers))
            )
            shown.append(
                serialize.memory_json(memory, in_scope=in_scope, names=names, bot=personas[0])
                | {"personas": personas}
            )
        return sorted(shown, key=lambda memory: not memory["in_scope"])

    def _reach(self, place: Room, viewer: world.Member, config: ServerConfig) -> RecallReach:
        """What recall would show a turn here by ``viewer`` (in a DM, by its owner, who alone speaks
        there), with the conversation as it stands: the people ``recall_subjects`` takes from it whose
        privacy level allows personal memories, as the store reads them (``RecallReach``)."""
        channel = place.channel
        speaker = place.owner or viewer
        bot_id = self.stack.application_id
        limit = get_settings().DIALOGUE_HISTORY_LIMIT
        history = [
            parse_message(message)
            for message in reversed(self.stack.discord.channel_messages(channel.channel_id))
        ][: max(limit - 1, 0)]  # newest first, leaving room for the turn's own message
        dialogue = read_dialogue(history, bot_user_id=bot_id, supports_vision=False, limit=limit)
        user = Participant(speaker.user_id, speaker.username, speaker.global_name)
        turn = TurnContext(
            guild_id=channel.guild_id,
            channel_id=channel.channel_id,
            user=user,
            bot=BotIdentity(bot_id, "kioku"),
            config=config,
            profile=UserProfile(speaker.user_id),
            now=clock.now(),
            parent_channel_id=channel.parent_id,
            participants=(user, *participants_from_messages(history, bot_id)),
            author_ids=frozenset((speaker.user_id, *dialogue.author_ids)),
        )
        people = frozenset(
            subject.user_id
            for subject in recall_subjects(turn)
            if allows_personal_memories(self._ltm.personal_target(subject.user_id).privacy_level)
        )
        policy = config.privacy if channel.guild_id else PrivacyPolicy()
        return RecallReach(turn.place, policy, config.persona.lineage_id, people, turn.now)
