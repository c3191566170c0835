"""The playground's session: who speaks where, the form and the buttons last shown, the turns seen,
and every action a person can take (chat, a slash command, a click, a form, ``:wait``, ``:janitor``,
``:private``…) as a console line. The console (``console``) and the web inspector (``web``) both
drive one; it prints what Discord would show to ``out``.

Chat lines travel the real path: the message is posted to the Discord stand-in, forwarded by a
signed relay POST to RelayFunction, queued on the (moto) FIFO queue, answered by TurnFunction.
"""

from __future__ import annotations

import json
import mimetypes
import re
import shlex
import tempfile
import textwrap
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import httpx

from kioku import clock
from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import CommandType, MessageFlag
from kioku.playground import slash, world
from kioku.playground.events import component_click, modal_submit, slash_command
from kioku.playground.functions import LambdaContext, load_handler
from kioku.playground.render import (
    named_mentions,
    render_context,
    render_form,
    render_interaction_response,
    render_json_file,
    render_message,
    render_time,
)
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.services.turn import TurnRecord
from kioku.signatures import sign_request

DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
MAX_WAIT = timedelta(days=3650)
MAX_UPLOAD_BYTES = 10 * 2**20  # Discord's upload limit without Nitro

CONSOLE_HELP = """\
text                                    say something as the current user in the current channel
@kioku …                                address the bot (in a guild channel it only answers when addressed:
                                        mentioned, replied to, or by a trigger word /server addressing sets)
/name [group] [sub] [option:value ...]  a signed slash command as Discord sends it, e.g. /help stm,
                                        /chat message:hello there, /server stm parameters refresh_cadence:3,
                                        /server addressing trigger_words:"kioku, kio" (option=value works too)
:submit [field:"text" ...]              fill in and send the form (modal) the last command opened
                                        (fields you leave out keep their prefilled text)
:click LABEL|N                          click a button of the last message that showed buttons, by its
                                        label (or the start of it) or its number, as the current user
:as alice|bob|carol                     speak as another member
:in general|random|secret|plans|dm      move to a channel (#secret is private, plans is a thread, dm is yours)
:private #channel / :public #channel    change who may view a channel, as a server admin would: Discord
                                        changes its permission overwrites and sends CHANNEL_UPDATE
:where                                  who and where you are
:context [full] [tools]                 every model request of the last turn, each message labelled (system,
                                        long-term memory, short-term memory, nudge, dialogue) with its depth,
                                        and the tools offered (their schemas the first time, or with "tools");
                                        "full" prints long lines whole
:wait DURATION                          move the whole stack's clock forward, e.g. :wait 25h, :wait 90m, :wait 91d
                                        (freshness, expiry, rate windows and new messages' times follow it)
:janitor                                run JanitorFunction now (it purges rows idle past the retention
                                        and deletes expired long-term memories)
:why [MESSAGE_ID]                       "Why this answer?" (a message's Apps menu) on a reply of the bot
                                        here (its last one without an id), as the current member
:remember [MESSAGE_ID]                  "Remember this" (a message's Apps menu) on a message here (your last
                                        one without an id): yours is a memory about you, another's a server one
:attach FILE                            attach a local text file to your next message (served by the playground's
                                        stand-in of Discord's CDN; kioku reads small text files into the message)
:memory                                 the short-term memory row of this channel
:discord                                what the Discord stand-in holds for this channel
:help / :quit"""


class Playground:
    """One person's seat at the local stack: the console's and the web inspector's state."""

    def __init__(self, stack: LocalStack, out: TextIO) -> None:
        self.stack = stack
        self.out = out
        self.http = httpx.Client(timeout=60)
        self.failures = 0
        self.member = world.MEMBERS[0]
        self.channel = world.CHANNELS[0]
        self.open_form: tuple[dict, dict] | None = None  # (the command that opened it, the modal)
        self.buttons: tuple[world.Channel, list[dict]] | None = None  # the last message with buttons
        self.overwrites: dict[str, tuple[dict, ...]] = {}  # channels whose privacy :private/:public changed
        # Told of each answer Discord would show (the command's payload, the answer): the inspector's page.
        self.on_answer: Callable[[dict, dict], None] | None = None
        self.turns: list[TurnRecord] = []  # every turn TurnFunction finished since the start
        self.schemas_shown: set[str] = set()  # the tool schemas :context printed (each once a session)
        self.files_dir: Path | None = None  # where attached files (exports) are written, made on the first
        self.attached: list[
            dict[str, Any]
        ] = []  # files :attach put on the CDN stand-in, for the next message
        stack.observe_turns(self.turns.append)
        self._set_up_world()

    def _set_up_world(self) -> None:
        """Discord's side only: kioku starts as on a server that just added it, configured by nobody."""
        discord = self.stack.discord
        for channel in world.CHANNELS:
            discord.seed_channel(
                channel.channel_id,
                name=channel.name,
                guild_id=channel.guild_id,
                parent_id=channel.parent_id,
                permission_overwrites=list(channel.permission_overwrites),
            )
        for member in world.MEMBERS:
            discord.seed_user(member.username, user_id=member.user_id, global_name=member.global_name)
            discord.seed_member(world.GUILD_ID, member.user())
            discord.seed_channel(member.dm_channel_id, name=f"dm-{member.key}")
        discord.seed_owner(world.GUILD_ID, world.OWNER.user_id)

    def handle_line(self, line: str) -> bool:
        """Run one console line; False when the console should stop."""
        line = line.strip()
        if not line or line.startswith("#"):
            return True
        if line in {":quit", ":q", ":exit"}:
            return False
        if line.startswith(":"):
            self.console_command(line[1:])
        elif line.startswith("/"):
            self.slash(line)
        else:
            self.chat(line)
        return True

    # -- console commands ---------------------------------------------------------------------------

    def console_command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        if name == "help":
            self.print(CONSOLE_HELP)
        elif name == "as":
            member = world.find_member(argument)
            if member is None:
                self.fail(f"no member called {argument!r}: try " + ", ".join(m.key for m in world.MEMBERS))
                return
            self.member = member
            if self.channel.guild_id is None:
                self.channel = world.dm_channel(member)
            self.where()
        elif name == "in":
            channel = world.find_channel(argument, self.member)
            if channel is None:
                self.fail(f"no channel called {argument!r}: try general, random, secret, plans or dm")
                return
            self.channel = channel
            self.where()
        elif name == "where":
            self.where()
        elif name == "context":
            self.show_context(argument)
        elif name == "memory":
            self.show_memory()
        elif name == "submit":
            self.submit_form(argument)
        elif name == "click":
            self.click(argument)
        elif name == "wait":
            self.wait(argument)
        elif name == "janitor":
            self.run_janitor()
        elif name == "why":
            self.why(argument)
        elif name == "remember":
            self.remember(argument)
        elif name == "attach":
            self.attach(argument)
        elif name in {"private", "public"}:
            self.set_privacy(argument, private=name == "private")
        elif name == "discord":
            for message in self.stack.discord.channel_messages(self.channel.channel_id)[-20:]:
                self.print(f"  [{message['id']}] {message['author']['username']}: {message['content']}")
        else:
            self.fail(f"unknown console command :{name} (:help lists them)")

    def why(self, message_id: str) -> None:
        """The message command "Why this answer?" on ``message_id`` (or the bot's last message here)."""
        from kioku.services.commands.registry import WHY_THIS_ANSWER

        # the bot's own posts and its personas' (through a channel webhook)
        self.message_command(
            WHY_THIS_ANSWER,
            message_id,
            lambda m: m["author"]["id"] == self.stack.application_id or m.get("webhook_id"),
        )

    def remember(self, message_id: str) -> None:
        """The message command "Remember this" on ``message_id`` (or the current member's last message here)."""
        from kioku.services.commands.registry import REMEMBER_THIS

        self.message_command(REMEMBER_THIS, message_id, lambda m: m["author"]["id"] == self.member.user_id)

    def message_command(self, name: str, message_id: str, default: Callable[[dict], Any]) -> None:
        """A message command on ``message_id`` (or the last message here ``default`` picks), with the
        message resolved into it as Discord does."""
        posted = self.stack.discord.channel_messages(self.channel.channel_id)
        picked = [m for m in posted if default(m)]
        target = message_id or (picked[-1]["id"] if picked else "")
        if not target:
            self.fail("no such message here yet: say something first, or give a message id (:discord)")
            return
        command = self._command(name, None, {}, self.channel)
        command["data"] = {
            "id": self.stack.discord.new_id(),
            "name": name,
            "type": CommandType.MESSAGE,
            "target_id": target,
            "resolved": {"messages": {m["id"]: m for m in posted if m["id"] == target}},
        }
        self.send_interaction(command, self.channel)

    def attach(self, argument: str) -> None:
        """Put a local file on the CDN stand-in, as Discord does with an upload, for the next message."""
        path = Path(argument.strip().strip('"')).expanduser()
        if not argument.strip() or not path.is_file():
            self.fail(f"no file {argument!r} to attach: :attach path/to/notes.txt")
            return
        if path.stat().st_size > MAX_UPLOAD_BYTES:
            self.fail(f"{path.name} is over {MAX_UPLOAD_BYTES // 2**20} MB, which Discord refuses")
            return
        guessed = mimetypes.guess_type(path.name)[0] or ""
        content_type = f"{guessed}; charset=utf-8" if guessed.startswith("text/") else guessed
        self.attached.append(
            self.stack.cdn.put(path.name, path.read_bytes(), content_type, channel_id=self.channel.channel_id)
        )
        self.print(f"({path.name} is attached to your next message)")

    def where(self) -> None:
        self.print(
            f"(you are {self.member.global_name or self.member.username} in {self.label(self.channel)})"
        )

    def wait(self, argument: str) -> None:
        try:
            span = parse_duration(argument)
        except ValueError as exc:
            self.fail(str(exc))
            return
        clock.advance(span)
        self.print(f"(time passes: it is now {clock.now():%Y-%m-%d %H:%M} UTC)")

    def run_janitor(self) -> None:
        """What the daily schedule does: invoke JanitorFunction with a scheduler event."""
        report = load_handler("janitor")(scheduler_event(clock.now()), LambdaContext())
        self.print(
            f"(janitor: {report['found']} short-term memory rows idle past the retention, "
            f"{report['deleted']} deleted, {report['kept']} resumed meanwhile and kept; "
            f"{report['expired_deleted']} expired long-term memories deleted)"
        )

    def set_privacy(self, argument: str, *, private: bool) -> None:
        """What Discord does when an admin toggles "Private Channel": the @everyone overwrite changes
        and the gateway sends CHANNEL_UPDATE, which the relay forwards to RelayFunction."""
        channel = world.find_channel(argument, self.member)
        if channel is None or channel.guild_id is None:
            self.fail(f"no server channel called {argument!r}: try general, random or secret")
            return
        if channel.parent_id:
            self.fail("a thread is as private as its channel: change its channel instead")
            return
        overwrites = world.everyone_denied_view() if private else []
        updated = self.stack.discord.set_permission_overwrites(channel.channel_id, overwrites)
        self.overwrites[channel.channel_id] = tuple(overwrites)
        body = json.dumps({"t": "CHANNEL_UPDATE", "d": updated}, separators=(",", ":")).encode()
        headers = {"content-type": "application/json", **sign_request(self.stack.relay_signing_key, body)}
        response = self.http.post(self.stack.urls["relay"], content=body, headers=headers)
        if response.status_code >= 300:
            self.fail(f"relay answered HTTP {response.status_code}: {response.text}")
            return
        effect = (
            "its memory is re-stamped private"
            if private
            else "its memory turns public once a turn there describes it (the event alone cannot tell)"
        )
        self.print(f"({self.label(channel)}: CHANNEL_UPDATE relayed; {effect})")

    def label(self, channel: world.Channel) -> str:
        """The channel's label, private or not as ``:private``/``:public`` last made it."""
        overwrites = self.overwrites.get(channel.channel_id, channel.permission_overwrites)
        return replace(channel, permission_overwrites=overwrites).label

    def show_context(self, argument: str = "") -> None:
        """Every model request of the last turn, labelled (``render_context``); ``full`` cuts no line,
        ``tools`` prints the tools' schemas again (else each is printed once a session)."""
        options = set(argument.split())
        if not options <= {"full", "tools"}:
            self.fail(f"unknown :context option {argument!r}: use :context, :context full or :context tools")
            return
        if not self.turns or not self.turns[-1].requests:
            self.print("(no turn yet: say something to kioku first)")
            return
        schemas_shown = set() if "tools" in options else self.schemas_shown
        for line in render_context(self.turns[-1], full="full" in options, schemas_shown=schemas_shown):
            self.print(line)

    def show_memory(self) -> None:
        """This channel's short-term memory, one row per persona that has one here (with its
        lineage, whose long-term memories it reads)."""
        from kioku.adapters.dynamodb.config_store import ConfigStore
        from kioku.adapters.dynamodb.stm_reads import StmReads
        from kioku.adapters.dynamodb.table import KiokuTable
        from kioku.domain.models import ServerConfig
        from kioku.domain.stm.entries import StmAddress

        table = KiokuTable(self.stack.resources.table_name)
        guild_id = self.channel.guild_id
        config = ConfigStore(table).get_server_config(guild_id) if guild_id else ServerConfig()
        shown = False
        for persona in config.personas if guild_id else (config.persona,):
            address = StmAddress.of(
                guild_id, self.member.user_id, self.channel.channel_id, persona.persona_id
            )
            entry = StmReads(table).get(address)
            if entry is None:
                continue
            if config.alters:
                self.print(f"[{persona.name}, lineage {persona.lineage_id}]")
            shown = True
            self.print(
                f"turns since refresh: {entry.turns_since_refresh}   last updated: {render_time(entry.last_updated)}"
            )
            self.print(f"summary: {entry.summary or '(none yet)'}")
            for slug, text in entry.categories.items():
                self.print(f"{slug}: {text}")
            for message in entry.crude:
                self.print(f"  {message.speaker}: {textwrap.shorten(message.text, 120)}")
        if not shown:
            self.print("(no short-term memory in this channel yet)")

    # -- talking ------------------------------------------------------------------------------------

    def chat(self, text: str) -> None:
        app_id = self.stack.application_id
        content = text.replace("@kioku", f"<@{app_id}>")
        discord = self.stack.discord
        before = len(discord.channel_messages(self.channel.channel_id))
        attached, self.attached = self.attached, []
        message = discord.seed_message(
            self.channel.channel_id, self.member.user(), content, attachments=attached
        )
        if f"<@{app_id}>" in content:
            message["mentions"] = [{"id": app_id, "username": "kioku", "bot": True}]
        body = gateway_dispatch(message, self.channel.guild_id, {"nick": None, "roles": []})
        response = self.http.post(
            self.stack.urls["relay"],
            content=body,
            headers={"content-type": "application/json", **sign_request(self.stack.relay_signing_key, body)},
        )
        if response.status_code == 204:
            self.print(
                '(kioku is not addressed, so it stays quiet; say "@kioku …", or give it trigger words '
                "with /server addressing trigger_words:kioku)"
            )
            return
        if response.status_code != 202:
            self.fail(f"relay answered HTTP {response.status_code}: {response.text}")
            return
        self.deliver()
        for posted in discord.channel_messages(self.channel.channel_id)[before + 1 :]:
            self.show(render_message(posted))

    def deliver(self) -> None:
        for batch in self.stack.deliver_turns():
            if batch.get("batchItemFailures"):
                self.fail(f"the turn worker reported failures: {batch['batchItemFailures']}")

    def slash(self, line: str) -> None:
        from kioku.services.commands.registry import definitions

        try:
            command = slash.parse(line, definitions(), self._channel_id)
        except slash.UnreadableCommand as exc:
            self.fail(str(exc))
            return
        self.send_interaction(
            self._command(command.name, command.path, command.options, self.channel, command.option_types),
            self.channel,
        )

    def _channel_id(self, name: str) -> str | None:
        channel = world.find_channel(name, self.member)
        return channel.channel_id if channel is not None and channel.guild_id else None

    def _command(
        self,
        name: str,
        path: str | None,
        options: dict[str, Any],
        channel: world.Channel,
        option_types: dict[str, int] | None = None,
    ) -> dict:
        """A fresh interaction by the current member in ``channel``, with their permissions."""
        return slash_command(
            self.stack.application_id,
            name,
            path,
            options,
            guild_id=channel.guild_id,
            channel_id=channel.channel_id,
            parent_channel_id=channel.parent_id,
            user_id=self.member.user_id,
            username=self.member.username,
            global_name=self.member.global_name,
            interaction_id=self.stack.discord.new_id(),
            token=uuid.uuid4().hex,
            permissions=self.member.permissions,
            option_types=option_types,
        )

    def click(self, choice: str) -> None:
        """What Discord sends when the current member clicks a button of the last message that showed
        some: a MESSAGE_COMPONENT from that message's channel."""
        if self.buttons is None:
            self.fail(
                "no buttons to click: run a command whose answer has some (e.g. /server memories review)"
            )
            return
        channel, rows = self.buttons
        picked = pick_button(rows, choice)
        if isinstance(picked, str):
            self.fail(picked)
            return
        self.press(channel, rows, picked)

    def press(self, channel: world.Channel, rows: list[dict], button: dict) -> None:
        """A MESSAGE_COMPONENT for ``button`` of a message with ``rows``, by the current member."""
        self.print(f"(clicked {button['label']})")
        message = {"id": self.stack.discord.new_id(), "flags": MessageFlag.EPHEMERAL, "components": rows}
        payload = component_click(
            self._command("click", None, {}, channel), button["custom_id"], message=message
        )
        self.send_interaction(payload, channel)

    def submit_form(self, argument: str) -> None:
        if self.open_form is None:
            self.fail("no form is open: run a command that opens one first (e.g. /server stm prompt-edit)")
            return
        fields = form_fields(self.open_form[1])
        try:
            words = shlex.split(argument)
        except ValueError as exc:
            self.fail(f"could not read those fields: {exc}")
            return
        assignments = [slash.split_assignment(word) for word in words]
        if None in assignments:
            self.fail(f'write each field as field:"text" (or field="text"); the form has {", ".join(fields)}')
            return
        changes = dict(pair for pair in assignments if pair is not None)
        self.submit_fields(changes)

    def submit_fields(self, changes: dict[str, str]) -> None:
        """Send the open form with ``changes`` to its fields (the others keep their prefilled text)."""
        if self.open_form is None:
            self.fail("no form is open: run a command that opens one first (e.g. /server stm prompt-edit)")
            return
        command, form = self.open_form
        fields = form_fields(form)
        unknown = set(changes) - set(fields)
        if unknown:
            self.fail(f"the form has no field {', '.join(sorted(unknown))}; it has {', '.join(fields)}")
            return
        self.open_form = None
        self.send_interaction(
            modal_submit(command, form["data"]["custom_id"], {**fields, **changes}), self.channel
        )

    def send_interaction(self, payload: dict, channel: world.Channel) -> None:
        body = json.dumps(payload).encode()
        response = self.http.post(
            self.stack.urls["interactions"],
            content=body,
            headers={"content-type": "application/json", **sign_request(self.stack.signing_key, body)},
        )
        if response.status_code != 200:
            self.fail(f"HTTP {response.status_code}: {response.text}")
            return
        answer = response.json()
        if answer.get("type") == ResponseType.MODAL:
            self.open_form = (payload, answer)
            self.show(render_form(answer))
            return
        self.show(render_interaction_response(answer))
        self.keep_buttons(answer, channel)
        deferred = answer.get("type") == ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
        if self.on_answer is not None and not deferred:
            self.on_answer(payload, answer)
        if deferred:
            token = payload["token"]
            before = len(self.stack.discord.channel_messages(self.channel.channel_id))
            self.deliver()
            edited = self.stack.discord.interaction_response(token)
            if edited is None:
                self.fail("the deferred answer was never filled in")
                return
            self.show(render_message({"author": {"username": "kioku"}, **edited}))
            self.show_files(self.stack.discord.interaction_attachments(token))
            if self.on_answer is not None:
                filled = {"type": ResponseType.CHANNEL_MESSAGE_WITH_SOURCE, "data": edited}
                self.on_answer(payload, filled)
            for posted in self.stack.discord.channel_messages(self.channel.channel_id)[before:]:
                self.show(render_message(posted))

    def show_files(self, files: dict[str, bytes]) -> None:
        """An attached file (an export) written where you can open it, and a JSON one shown."""
        if not files:
            return
        if self.files_dir is None:
            self.files_dir = Path(tempfile.mkdtemp(prefix="kioku-playground-files-"))
        for name, data in files.items():
            path = self.files_dir / Path(name).name
            path.write_bytes(data)
            self.show(f"  (written to {path})")
            if name.endswith(".json"):
                self.show(render_json_file(data))

    def keep_buttons(self, answer: dict, channel: world.Channel) -> None:
        """A new message with buttons becomes the one ``:click`` clicks; an updated message replaces it."""
        rows = (answer.get("data") or {}).get("components") or []
        if answer.get("type") == ResponseType.UPDATE_MESSAGE:
            self.buttons = (channel, rows) if rows else None
        elif rows:
            self.buttons = (channel, rows)

    def fail(self, text: str) -> None:
        self.failures += 1
        self.print(f"! {text}")

    def print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def show(self, text: str) -> None:
        """What Discord shows: mentions of the guild's members and channels by name."""
        self.print(named_mentions(text, self.mentions()))

    def mentions(self) -> dict[str, str]:
        """The names ``named_mentions`` shows for kioku, each member and each guild channel."""
        return (
            {self.stack.application_id: "kioku"}
            | {member.user_id: member.global_name or member.key for member in world.MEMBERS}
            | {f"#{channel.channel_id}": channel.name for channel in world.CHANNELS}
        )


def parse_duration(text: str) -> timedelta:
    """``25h``, ``90m``, ``2d``, ``1h30m``, ``45s``: how far ``:wait`` moves the clock."""
    match = DURATION.fullmatch(text.strip().lower())
    if not text.strip() or match is None:
        raise ValueError(f"not a duration: {text!r} (try 25h, 90m, 2d or 1h30m)")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    span = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if not timedelta(0) < span <= MAX_WAIT:
        raise ValueError(f"wait between a second and {MAX_WAIT.days} days, not {text!r}")
    return span


def scheduler_event(moment: datetime) -> dict[str, Any]:
    """The event EventBridge Scheduler sends a Lambda target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "time": f"{moment:%Y-%m-%dT%H:%M:%SZ}",
        "resources": ["arn:aws:scheduler:us-east-1:000000000000:schedule/default/kioku-janitor"],
        "detail": {},
    }


def form_fields(modal: dict) -> dict[str, str]:
    """Each text input of a modal by its custom_id, with the text it is prefilled with."""
    return {
        row["components"][0]["custom_id"]: row["components"][0].get("value", "")
        for row in modal["data"]["components"]
    }


def pick_button(rows: list[dict], choice: str) -> dict | str:
    """The button ``choice`` names (its number as shown, its label, or the unique start of a label),
    or why none can be clicked."""
    buttons = [
        component for row in rows for component in row.get("components", []) if "custom_id" in component
    ]
    wanted = choice.strip().casefold()
    if wanted.isdigit():
        matches = buttons[int(wanted) - 1 : int(wanted)] if int(wanted) >= 1 else []
    else:
        matches = [button for button in buttons if button.get("label", "").casefold() == wanted] or [
            button for button in buttons if button.get("label", "").casefold().startswith(wanted)
        ]
    labels = " ".join(f"[{n}: {button.get('label')}]" for n, button in enumerate(buttons, 1))
    if not wanted or not matches:
        return f"no button {choice!r}: the buttons are {labels}"
    if len(matches) > 1:
        return f"{choice!r} could be several buttons: {labels}; give its number or its whole label"
    if matches[0].get("disabled"):
        return f"the button {matches[0].get('label')!r} is disabled"
    return matches[0]
