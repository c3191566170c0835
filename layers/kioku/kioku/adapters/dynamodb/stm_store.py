"""Short-term memory rows: one live item per (server, channel, persona), or per (user, persona) in DMs
(``keys.stm_row_key``), in the ``Recency`` index by scope and lineage (a private channel's row in a
partition of its own) and by ``gsi1sk = last_updated`` (ISO UTC), in ``JanitorAge`` by
``gsi2sk = last_updated``, and a thread's row, once a turn described it, in ``ThreadParent``; a TTL
(``expires_at = last_updated + STM_JANITOR_RETENTION_DAYS``) is the janitor's backstop.

A turn loads its state in two requests: one BatchGetItem (server config, user profile, the current
row, in a thread its parent's row, and in a guild the user's DM row for cross-server folding) and one
Query on ``Recency`` for the scope's other public rows, newest first. Private channels' rows sit in a
partition of their own, so that Query never returns them; it is read only where a server's settings
may show them (the bypass, or a channel overridden to public). Every row read is filtered again by
``may_recall_row``: a row never described (written before privacy was recorded) counts as private.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kioku.adapters.dynamodb.config_store import server_config_from_item, user_profile_from_item
from kioku.adapters.dynamodb.errors import ConditionFailed, StoreError, TransactionCancelled
from kioku.adapters.dynamodb.forgetting import op_not_forgotten_since
from kioku.adapters.dynamodb.keys import (
    AGE_SHARDS,
    ItemKey,
    KeyRange,
    age_shard,
    age_shard_partition,
    channel_row_range,
    dm_row_range,
    guild_row_range,
    index_by_key,
    lines_note_key,
    lines_note_range,
    noted_row,
    recency_partition,
    server_config_key,
    stm_row_key,
    thread_parent_partition,
    user_profile_key,
)
from kioku.adapters.dynamodb.table import Cursor, Item, KiokuTable
from kioku.clock import parse_time
from kioku.domain.forgetting import Said, SpeakerForgotten
from kioku.domain.models import ServerConfig, StmCategory, UserProfile
from kioku.domain.privacy import ChannelDescription, Place, PrivacyMode
from kioku.domain.stm.categories import MAX_LABEL_CHARS, MAX_SLUG_CHARS
from kioku.domain.stm.context import StmState
from kioku.domain.stm.entries import (
    CrudeMessage,
    CrudeRole,
    StmAddress,
    StmEntry,
    StmLimits,
    has_live_content,
    may_recall_row,
    merge_crude,
)
from kioku.domain.stm.update_tool import StmUpdate
from kioku.domain.turn import TurnAlreadyRecorded

logger = logging.getLogger(__name__)

RECENCY_INDEX: Final = "Recency"
ANY_TIME: Final = object()  # write_memory's default: any earlier write may be replaced
JANITOR_INDEX: Final = "JanitorAge"
THREAD_PARENT_INDEX: Final = "ThreadParent"
MAX_CHANNEL_NAME_CHARS: Final = 100
MAX_CAPTURE_ATTEMPTS: Final = 48
MAX_RECENT_PAGES: Final = 4
_PAGE_SLACK: Final = 2
_MAX_PRIVATE_SLACK: Final = 10
_BACKOFF_STEP_SECONDS: Final = 0.002
MAX_FORGET_ATTEMPTS: Final = 16
_STAMP_ATTRIBUTES: Final = (
    "channel_id",
    "persona_id",
    "server_id",
    "lineage_id",
    "parent_channel_id",
    "channel_name",
    "private",
    "private_thread",
    "described_at",
)
"""What reconciling a row with its guild's channel list reads of it."""


class NewerMemoryExists(StoreError):
    """Another turn saved this channel's memory after ours was written; ours was not stored."""


@dataclass
class PurgeReport:
    found: int = 0
    deleted: int = 0
    kept: int = 0


class CaptureConflict(StoreError):
    """The crude list kept changing under us; the capture gave up (nothing of it was stored)."""


@dataclass(frozen=True, slots=True)
class StmRowIdentity:
    """Everything a write needs to create the row if it is missing, and the channel's privacy as
    Discord described it at ``described_at`` (a capture re-stamps the row unless it was described later)."""

    address: StmAddress
    lineage_id: int
    parent_channel_id: str | None = None
    channel_name: str | None = None
    private: bool = True
    private_thread: bool = False
    described_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TurnMemoryQuery:
    """What a turn's read of its short-term memory needs: where the turn is and who speaks, the persona
    whose row to guess (``persona_hint``), how far back other channels' rows count
    (``active_since``) and how many of them (``other_limit``), and since when a raw line counts as
    something to show (``crude_since``, by default ``active_since``)."""

    guild_id: str | None
    channel_id: str
    user_id: str
    parent_channel_id: str | None
    persona_hint: str
    active_since: datetime
    other_limit: int
    crude_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class TurnMemoryLoad:
    config: ServerConfig
    profile: UserProfile
    state: StmState
    extra: Mapping[ItemKey, Item] = field(default_factory=dict)
    """Items of ``extra_keys`` that rode in the same BatchGetItem."""


@dataclass(frozen=True, slots=True)
class TurnCapture:
    """What a turn's commit writes to its short-term memory row: ``lines`` merged into ``read`` (the
    row as the turn loaded it), refused if ``said``'s speaker asked to forget everything since; with
    ``keep_lines`` False (a speaker with full privacy) the turn is only counted."""

    identity: StmRowIdentity
    read: StmEntry | None
    lines: tuple[CrudeMessage, ...]
    speaker_id: str
    now: datetime
    limits: StmLimits
    said: Said | None = None
    keep_lines: bool = True


class StmStore:
    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    # -- reads -------------------------------------------------------------------------------------

    def load_turn(self, query: TurnMemoryQuery, *, extra_keys: Sequence[ItemKey] = ()) -> TurnMemoryLoad:
        """Config, profile and STM state of a turn. ``persona_hint`` guesses the current row's persona
        so it can ride in the same BatchGetItem; a wrong guess costs one GetItem, never a wrong row.
        Other rows count only when they hold something to show (``has_live_content``: a summary, a
        section, or a raw line sent after ``crude_since``).
        ``extra_keys`` (other stores' items the turn needs) ride in the same BatchGetItem."""
        guild_id, channel_id, user_id = query.guild_id, query.channel_id, query.user_id
        parent_channel_id, persona_hint = query.parent_channel_id, query.persona_hint
        active_since, other_limit, crude_since = query.active_since, query.other_limit, query.crude_since
        guess = StmAddress.of(guild_id, user_id, channel_id, persona_hint)
        dm_guess = StmAddress.of(None, user_id, channel_id, persona_hint)
        parent_guess = (
            StmAddress.of(guild_id, user_id, parent_channel_id, persona_hint)
            if guild_id and parent_channel_id
            else None
        )
        keys = [user_profile_key(user_id), stm_row_key(guess), *extra_keys]
        if guild_id:
            keys += [server_config_key(guild_id), stm_row_key(dm_guess)]
        if parent_guess is not None:
            keys.append(stm_row_key(parent_guess))
        found = index_by_key(self._table.batch_get(keys))
        config_item = found.get(server_config_key(guild_id)) if guild_id else None
        config = server_config_from_item(config_item, guild_id)
        profile = user_profile_from_item(found.get(user_profile_key(user_id)), user_id)

        def row(address: StmAddress, guessed: StmAddress | None) -> StmEntry | None:
            if address == guessed:
                return entry_from_item(found.get(stm_row_key(address)))
            return entry_from_item(self._table.get(stm_row_key(address)))

        persona_id = config.persona.persona_id
        address = StmAddress.of(guild_id, user_id, channel_id, persona_id)
        current = row(address, guess)

        place = Place(guild_id, channel_id, parent_channel_id)
        policy = config.privacy

        def eligible(entry: StmEntry) -> bool:
            return (
                entry.channel_id != channel_id
                and has_live_content(entry, crude_since or active_since)
                and may_recall_row(
                    entry, place, policy, user_id=user_id, cross_server_opt_in=profile.cross_server_opt_in
                )
            )

        others: list[StmEntry] = []
        if other_limit > 0:
            lineage = config.persona.lineage_id
            private_overrides = sum(mode is PrivacyMode.PRIVATE for mode in policy.overrides.values())
            slack = _PAGE_SLACK + min(private_overrides, _MAX_PRIVATE_SLACK)
            others = self.recent_rows(
                recency_partition(address, lineage), active_since, other_limit, eligible, slack
            )
            if guild_id and policy.reads_private_rows:
                others += self.recent_rows(
                    recency_partition(address, lineage, private=True), active_since, other_limit, eligible
                )
            if parent_guess is not None:
                parent = row(
                    StmAddress.of(guild_id, user_id, parent_channel_id or "", persona_id), parent_guess
                )
                if parent is not None and parent.last_updated and parent.last_updated >= active_since:
                    others.append(parent)
            if guild_id and profile.cross_server_opt_in:
                own_dm = row(StmAddress.of(None, user_id, channel_id, persona_id), dm_guess)
                if own_dm is not None and own_dm.last_updated and own_dm.last_updated >= active_since:
                    others.append(own_dm)
            unique = {stm_row_key(entry.address): entry for entry in others}
            others = [entry for entry in unique.values() if eligible(entry)]
        return TurnMemoryLoad(
            config=config, profile=profile, state=StmState(current, tuple(others)), extra=found
        )

    def recent_rows(
        self,
        partition: str,
        active_since: datetime,
        want: int,
        eligible: Callable[[StmEntry], bool],
        slack: int = _PAGE_SLACK,
    ) -> list[StmEntry]:
        """Rows of ``partition`` updated since ``active_since``, newest first, until ``want`` of them
        are ``eligible`` (a small first page; more pages only when filtering left too few)."""
        rows: list[StmEntry] = []
        start_key: Cursor | None = None
        for _ in range(MAX_RECENT_PAGES):
            items, start_key = self._table.query(
                "#pk = :pk AND #sk >= :since",
                names={"#pk": "gsi1pk", "#sk": "gsi1sk"},
                values={":pk": partition, ":since": _iso(active_since)},
                index=RECENCY_INDEX,
                newest_first=True,
                limit=want + 1 + slack,
                start_key=start_key,
            )
            rows.extend(entry for entry in map(entry_from_item, items) if entry is not None)
            if start_key is None or sum(map(eligible, rows)) >= want:
                break
        return rows

    # -- the janitor --------------------------------------------------------------------------------

    def purge_idle(self, idle_before: datetime, *, page_size: int = 100) -> PurgeReport:
        """Delete every row not updated since ``idle_before``, found through the ``JanitorAge`` index
        shard by shard (no scan). Each delete is conditional on the row still being idle, so a
        conversation that resumed between the query and the delete keeps its memory."""
        report = PurgeReport()
        cutoff = _iso(idle_before)
        for shard in range(AGE_SHARDS):
            start_key: Cursor | None = None
            while True:
                keys, start_key = self._table.query(
                    "#pk = :shard AND #sk < :cutoff",
                    names={"#pk": "gsi2pk", "#sk": "gsi2sk"},
                    values={":shard": age_shard_partition(shard), ":cutoff": cutoff},
                    index=JANITOR_INDEX,
                    limit=page_size,
                    start_key=start_key,
                )
                for key in keys:
                    report.found += 1
                    try:
                        self._table.delete(
                            ItemKey.of(key),
                            condition="#last_updated < :cutoff",
                            names={"#last_updated": "last_updated"},
                            values={":cutoff": cutoff},
                        )
                        report.deleted += 1
                    except ConditionFailed:
                        report.kept += 1
                if start_key is None:
                    break
        return report

    def get(self, address: StmAddress) -> StmEntry | None:
        return entry_from_item(self._table.get(stm_row_key(address)))

    # -- a person's own data ---------------------------------------------------------------------------

    def _op_note_lines(self, user_id: str, address: StmAddress, now: datetime, retention: timedelta) -> dict:
        """The transaction operation that notes ``user_id``'s raw lines in ``address``'s row; the note
        expires with the row's retention."""
        note = lines_note_key(user_id, stm_row_key(address))
        return self._table.op_put({**note.as_item(), "expires_at": int((now + retention).timestamp())})

    def rows_with_lines_of(self, user_id: str) -> list[StmEntry]:
        """The rows noted as holding ``user_id``'s raw lines (rows gone since are left out)."""
        rows = []
        for note in self._notes_of(user_id):
            entry = entry_from_item(self._table.get(noted_row(note)))
            if entry is not None:
                rows.append(entry)
        return rows

    def dm_rows_of(self, user_id: str) -> list[StmEntry]:
        """Every DM row of ``user_id`` (one per persona)."""
        items = self._all(dm_row_range(user_id))
        return [entry for entry in map(entry_from_item, items) if entry is not None]

    def forget_lines_of(self, user_id: str) -> int:
        """Remove every raw line ``user_id`` wrote from every row that holds one, each row rewritten on
        the condition that it did not change since it was read (a turn appending meanwhile makes it
        read again). Returns the lines removed."""
        removed = 0
        for note in self._notes_of(user_id):
            removed += self._strip_lines(noted_row(note), user_id)
            self._table.delete(note)
        return removed

    def delete_dm_rows_of(self, user_id: str) -> int:
        rows = self.dm_rows_of(user_id)
        for entry in rows:
            self._table.delete(stm_row_key(entry.address))
        return len(rows)

    def _strip_lines(self, key: ItemKey, user_id: str) -> int:
        for attempt in range(MAX_FORGET_ATTEMPTS):
            entry = entry_from_item(self._table.get(key))
            if entry is None:
                return 0
            kept = [message for message in entry.crude if message.user_id != user_id]
            if len(kept) == len(entry.crude):
                return 0
            expression = _Update()
            expression.set("crude", [_crude_to_item(message) for message in kept])
            expression.set("version", entry.version + 1)
            try:
                self._table.update(
                    key,
                    expression.text(),
                    condition=f"{expression.name('version')} = {expression.value(entry.version)}",
                    names=expression.names,
                    values=expression.values,
                )
                return len(entry.crude) - len(kept)
            except ConditionFailed:
                _backoff(attempt)
        raise CaptureConflict(f"a row kept changing while forgetting lines ({MAX_FORGET_ATTEMPTS} attempts)")

    def _notes_of(self, user_id: str) -> list[ItemKey]:
        return [ItemKey.of(note) for note in self._all(lines_note_range(user_id))]

    def _all(self, key_range: KeyRange) -> list[Item]:
        items: list[Item] = []
        start_key: Cursor | None = None
        while True:
            page, start_key = self._table.query_range(key_range, consistent=True, start_key=start_key)
            items.extend(page)
            if start_key is None:
                return items

    # -- channel events ------------------------------------------------------------------------------

    def restamp_channel(
        self, guild_id: str, channel_id: str, *, private: bool | None, name: str | None, now: datetime
    ) -> int:
        """A channel changed: its rows (every persona) take its new privacy, and so do the rows of its
        threads that a turn has described as its threads (a private thread keeps its own; a row never
        described stays private); with ``private`` None only the name changes. Each write is
        conditional on the row still existing and bumps its version, so a capture that looked at the
        channel before this cannot stamp the old privacy back; a privacy change is written only to rows
        no turn or event described after ``now`` (when the event was seen), so a late event cannot
        stamp an older privacy over a newer look. Returns the rows changed."""
        changed = 0
        for entry in [*self._own_rows(guild_id, channel_id), *self._thread_rows(guild_id, channel_id)]:
            own = entry.channel_id == channel_id
            expression = _Update()
            if own and name and name[:MAX_CHANNEL_NAME_CHARS] != entry.channel_name:
                expression.set("channel_name", name[:MAX_CHANNEL_NAME_CHARS])
            follows = own or not (entry.private_thread or entry.described_at is None)
            condition = "attribute_exists(pk)"
            if private is not None and follows and entry.private is not private:
                expression.set("private", private)
                expression.set("described_at", _iso(now))
                expression.set("gsi1pk", recency_partition(entry.address, entry.lineage_id, private=private))
                expression.add("version", 1)
                described = expression.name("described_at")
                condition += (
                    f" AND (attribute_not_exists({described}) OR {described} < {expression.value(_iso(now))})"
                )
            if not expression.has_changes():
                continue
            try:
                self._table.update(
                    stm_row_key(entry.address),
                    expression.text(),
                    condition=condition,
                    names=expression.names,
                    values=expression.values,
                )
                changed += 1
            except ConditionFailed:
                continue
        return changed

    def delete_channel(self, guild_id: str, channel_id: str) -> int:
        """A channel or thread is gone: delete its rows and its threads' rows. Returns how many."""
        rows = [*self._own_rows(guild_id, channel_id), *self._thread_rows(guild_id, channel_id)]
        for entry in rows:
            self._table.delete(stm_row_key(entry.address))
        return len(rows)

    # -- a guild's whole channel list (GUILD_CREATE) --------------------------------------------------

    def guild_rows(self, guild_id: str, *, max_rows: int) -> tuple[list[StmEntry], bool]:
        """Every channel's and thread's row of ``guild_id`` (every persona), only their identity and
        privacy stamp: pages of one key-range Query on the server's partition, at most ``max_rows``
        rows; True when that was all of them."""
        rows: list[StmEntry] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query_range(
                guild_row_range(guild_id),
                limit=max_rows - len(rows),
                start_key=start_key,
                attributes=_STAMP_ATTRIBUTES,
            )
            rows.extend(entry for entry in map(entry_from_item, items) if entry is not None)
            if start_key is None:
                return rows, True
            if len(rows) >= max_rows:
                return rows, False

    def restamp_described(self, entry: StmEntry, description: ChannelDescription, at: datetime) -> bool:
        """Stamp ``entry``'s row with ``description``, Discord's look at its channel at ``at``, unless a
        turn or event described it later (so a late list never stamps an older privacy back); bumps
        the version as any re-stamp does. True if the row changed."""
        expression = _Update()
        name = (description.name or "")[:MAX_CHANNEL_NAME_CHARS]
        if name and name != entry.channel_name:
            expression.set("channel_name", name)
        parent = description.parent_channel_id
        if (
            entry.private is not description.private
            or entry.private_thread != description.private_thread
            or parent != entry.parent_channel_id
        ):
            expression.set("private", description.private)
            expression.set("private_thread", description.private_thread)
            expression.set("described_at", _iso(at))
            expression.set(
                "gsi1pk", recency_partition(entry.address, entry.lineage_id, private=description.private)
            )
            expression.add("version", 1)
            if parent:
                expression.set("parent_channel_id", parent)
                expression.set("gsi3pk", thread_parent_partition(entry.address.guild_id or "", parent))
            else:
                expression.remove("parent_channel_id")
                expression.remove("gsi3pk")
        if not expression.has_changes():
            return False
        described = expression.name("described_at")
        try:
            self._table.update(
                stm_row_key(entry.address),
                expression.text(),
                condition=(
                    f"attribute_exists(pk) AND (attribute_not_exists({described}) "
                    f"OR {described} < {expression.value(_iso(at))})"
                ),
                names=expression.names,
                values=expression.values,
            )
        except ConditionFailed:
            return False
        return True

    def delete_described_before(self, entry: StmEntry, at: datetime) -> bool:
        """Delete ``entry``'s row unless a turn described its channel after ``at`` (it exists, then)."""
        try:
            self._table.delete(
                stm_row_key(entry.address),
                condition="attribute_not_exists(#described) OR #described < :at",
                names={"#described": "described_at"},
                values={":at": _iso(at)},
            )
        except ConditionFailed:
            return False
        return True

    def _own_rows(self, guild_id: str, channel_id: str) -> list[StmEntry]:
        """The rows of ``channel_id``, one per persona: a key-range query."""
        items = self._all(channel_row_range(guild_id, channel_id))
        return [entry for entry in map(entry_from_item, items) if entry is not None]

    def _thread_rows(self, guild_id: str, channel_id: str) -> list[StmEntry]:
        """The rows of the channel's threads, through the sparse ``ThreadParent`` index (its projection
        holds what a re-stamp needs)."""
        rows: list[StmEntry] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query(
                "#pk = :pk",
                names={"#pk": "gsi3pk"},
                values={":pk": thread_parent_partition(guild_id, channel_id)},
                index=THREAD_PARENT_INDEX,
                start_key=start_key,
            )
            rows.extend(entry for entry in map(entry_from_item, items) if entry is not None)
            if start_key is None:
                return rows

    # -- writes ------------------------------------------------------------------------------------

    def write_memory(
        self,
        identity: StmRowIdentity,
        update: StmUpdate,
        categories: Sequence[StmCategory],
        now: datetime,
        retention: timedelta,
        *,
        reset_counter: bool = True,
        expect_written_at: datetime | object | None = ANY_TIME,
        said: Said | None = None,
    ) -> None:
        """The tool's write: the summary or the categories map (never both), the counter back to 0
        (not for a person's hand edit: the cadence measures whether the bot keeps up). Refuses to
        overwrite a memory written later than ``now``, or, with ``expect_written_at``, one written at
        any other time than the text the writer saw (None: never written) (``NewerMemoryExists``).
        ``said``: the message the write answers, in a DM (the row is the speaker's); refused with
        ``SpeakerForgotten`` if they asked to forget everything since."""
        expression = _Update()
        _set_identity(expression, identity, now, retention)
        if update.summary is not None:
            written_at = "summary_updated_at"
            expression.set("summary", update.summary)
        else:
            written_at = "categories_updated_at"
            texts = {slug: text for slug, text in (update.categories or {}).items() if text}
            expression.set("categories", texts)
            expression.set(
                "category_labels",
                [{"slug": c.slug[:MAX_SLUG_CHARS], "label": c.label[:MAX_LABEL_CHARS]} for c in categories],
            )
        expression.set(written_at, _iso(now))
        if reset_counter:
            expression.set("turns_since_refresh", 0)
        else:
            expression.set("turns_since_refresh", 0, if_missing=True)
        expression.set("version", 0, if_missing=True)
        if expect_written_at is ANY_TIME:
            condition = (
                f"attribute_not_exists({expression.name(written_at)}) OR "
                f"{expression.name(written_at)} <= {expression.value(_iso(now))}"
            )
        elif expect_written_at is None:
            condition = f"attribute_not_exists({expression.name(written_at)})"
        else:
            condition = f"{expression.name(written_at)} = {expression.value(_iso(expect_written_at))}"
        row = {"names": expression.names, "values": expression.values, "condition": condition}
        try:
            if said is None:
                self._table.update(stm_row_key(identity.address), expression.text(), **row)
                return
            self._table.transact_write(
                [
                    self._table.op_update(stm_row_key(identity.address), expression.text(), **row),
                    op_not_forgotten_since(self._table, said.user_id, said.at),
                ]
            )
        except ConditionFailed as exc:
            raise NewerMemoryExists("a newer short-term memory was saved meanwhile") from exc
        except TransactionCancelled as exc:
            row_reason, speaker = exc.reasons or (None, None)
            if speaker is not None and speaker.condition_failed:
                raise SpeakerForgotten("the speaker asked to forget everything since") from exc
            if row_reason is not None and row_reason.condition_failed:
                raise NewerMemoryExists("a newer short-term memory was saved meanwhile") from exc
            raise

    def capture_turn(self, capture: TurnCapture, *, also: Sequence[dict[str, Any]] = ()) -> None:
        """Write a turn's capture in one transaction with ``also`` (the turn's completion record and
        the drop of its outbox): its lines (see ``capture``), in a guild with the note of where the
        speaker's lines are (the row is shared, so they can have them forgotten), or, for a speaker
        with full privacy, only the count (see ``count_turn``)."""
        if not capture.keep_lines:
            self.count_turn(capture.identity, capture.now, capture.limits, also=also)
            return
        address = capture.identity.address
        if address.guild_id:
            note = self._op_note_lines(capture.speaker_id, address, capture.now, capture.limits.retention)
            also = [*also, note]
        self.capture(
            capture.identity,
            capture.read,
            capture.lines,
            capture.now,
            capture.limits,
            also=also,
            said=capture.said,
        )

    def capture(
        self,
        identity: StmRowIdentity,
        read: StmEntry | None,
        messages: Sequence[CrudeMessage],
        now: datetime,
        limits: StmLimits,
        *,
        also: Sequence[dict[str, Any]] = (),
        said: Said | None = None,
    ) -> StmEntry | None:
        """Append this turn's messages and count the turn, atomically with the crude list it trimmed.

        The crude list is rewritten only if the row's ``version`` is still the one read; on a
        conflict the stored row (returned with the failure) is merged again, so no concurrent append
        is lost; the counter rides in the same write as ``ADD``, so it counts each capture once.
        ``also`` (transaction operations, e.g. the turn's completion record) commit in the same
        transaction; if one of their conditions fails, ``TurnAlreadyRecorded`` is raised and nothing
        is written. ``said``: the speaker whose message the turn answers; if they asked to forget
        everything since, ``SpeakerForgotten`` is raised and nothing is written. Returns the new row,
        except with ``also`` or ``said`` (transactions return nothing).
        """
        key = stm_row_key(identity.address)
        checks = [op_not_forgotten_since(self._table, said.user_id, said.at)] if said else []
        for attempt in range(MAX_CAPTURE_ATTEMPTS):
            if read is not None and _already_captured(read, messages):
                self._commit_also(also)
                return read
            expression = _Update()
            _set_identity(
                expression, identity, now, retention=limits.retention, describe=_describes(identity, read)
            )
            expression.set(
                "crude", [_crude_to_item(m) for m in merge_crude(_crude(read), messages, now, limits)]
            )
            expression.set("version", (read.version if read else 0) + 1)
            expression.add("turns_since_refresh", 1)
            if read is None:
                condition = "attribute_not_exists(pk)"
            else:
                condition = f"{expression.name('version')} = {expression.value(read.version)}"
            try:
                if also or checks:
                    row_update = self._table.op_update(
                        key,
                        expression.text(),
                        condition=condition,
                        names=expression.names,
                        values=expression.values,
                    )
                    self._table.transact_write([row_update, *checks, *also])
                    return None
                item = self._table.update(
                    key,
                    expression.text(),
                    condition=condition,
                    names=expression.names,
                    values=expression.values,
                    return_new=True,
                )
            except ConditionFailed as exc:
                read = entry_from_item(exc.old_item) if exc.old_item else self.get(identity.address)
                _backoff(attempt)
                continue
            except TransactionCancelled as exc:
                if not exc.reasons:
                    raise
                row, *others = exc.reasons
                if any(reason.condition_failed for reason in others[: len(checks)]):
                    raise SpeakerForgotten("the speaker asked to forget everything since") from exc
                if any(reason.condition_failed for reason in others[len(checks) :]):
                    raise TurnAlreadyRecorded("another attempt already recorded this turn") from exc
                if not (row.condition_failed or exc.conflicted):
                    raise
                if row.condition_failed:
                    read = entry_from_item(row.old_item) if row.old_item else self.get(identity.address)
                _backoff(attempt)
                continue
            entry = entry_from_item(item)
            if entry is None:
                raise StoreError("the captured row could not be read back")
            return entry
        raise CaptureConflict(f"gave up after {MAX_CAPTURE_ATTEMPTS} conflicting captures")

    def count_turn(
        self,
        identity: StmRowIdentity,
        now: datetime,
        limits: StmLimits,
        *,
        also: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Count a bot turn without storing any of its messages (a user with full privacy); ``also``
        commits in the same transaction, as for ``capture``."""
        expression = _Update()
        _set_identity(expression, identity, now, limits.retention, refresh=False)
        expression.set("version", 0, if_missing=True)
        expression.add("turns_since_refresh", 1)
        key = stm_row_key(identity.address)
        if not also:
            self._table.update(key, expression.text(), names=expression.names, values=expression.values)
            return
        row_update = self._table.op_update(
            key, expression.text(), names=expression.names, values=expression.values
        )
        try:
            self._table.transact_write([row_update, *also])
        except TransactionCancelled as exc:
            if any(reason.condition_failed for reason in exc.reasons[1:]):
                raise TurnAlreadyRecorded("another attempt already recorded this turn") from exc
            raise

    def _commit_also(self, also: Sequence[dict[str, Any]]) -> None:
        if not also:
            return
        try:
            self._table.transact_write(list(also))
        except TransactionCancelled as exc:
            if any(reason.condition_failed for reason in exc.reasons):
                raise TurnAlreadyRecorded("another attempt already recorded this turn") from exc
            raise


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, _BACKOFF_STEP_SECONDS * min(attempt + 1, 10)))


def _already_captured(read: StmEntry, messages: Sequence[CrudeMessage]) -> bool:
    """A redelivered turn: every message of it is already in the row it would be appended to."""
    stored = {message.message_id for message in read.crude if message.message_id}
    return bool(messages) and all(message.message_id in stored for message in messages)


# -- item mapping -----------------------------------------------------------------------------------


def entry_from_item(item: Item | None) -> StmEntry | None:
    """The row as a domain entry; None for a missing item or one too damaged to identify."""
    if item is None:
        return None
    try:
        address = StmAddress(
            channel_id=str(item["channel_id"]),
            persona_id=str(item["persona_id"]),
            guild_id=_optional_str(item.get("server_id")),
            user_id=_optional_str(item.get("user_id")),
        )
        return StmEntry(
            address=address,
            lineage_id=int(item["lineage_id"]),
            last_updated=_parse_time(item.get("last_updated")),
            parent_channel_id=_optional_str(item.get("parent_channel_id")),
            channel_name=_optional_str(item.get("channel_name")),
            summary=_optional_str(item.get("summary")),
            summary_updated_at=_parse_time(item.get("summary_updated_at")),
            categories={str(k): str(v) for k, v in (item.get("categories") or {}).items()},
            category_labels=tuple(
                (str(label["slug"]), str(label["label"])) for label in item.get("category_labels") or ()
            ),
            categories_updated_at=_parse_time(item.get("categories_updated_at")),
            crude=tuple(_crude_messages(item.get("crude") or ())),
            turns_since_refresh=int(item.get("turns_since_refresh", 0)),
            version=int(item.get("version", 0)),
            private=item["private"] if isinstance(item.get("private"), bool) else None,
            private_thread=item.get("private_thread") is True,
            described_at=_parse_time(item.get("described_at")),
        )
    except (KeyError, TypeError, ValueError):
        logger.warning("skipping a damaged STM item %s/%s", item.get("pk"), item.get("sk"))
        return None


def _crude_messages(items: Iterable[Mapping[str, Any]]) -> Iterable[CrudeMessage]:
    for item in items:
        try:
            yield CrudeMessage(
                speaker=str(item["speaker"]),
                user_id=str(item["user_id"]),
                role=CrudeRole(item["role"]),
                text=str(item["text"]),
                ts=_parse_time(item["ts"]) or datetime.min.replace(tzinfo=UTC),
                message_id=_optional_str(item.get("message_id")),
            )
        except (KeyError, TypeError, ValueError):
            continue


def _crude_to_item(message: CrudeMessage) -> Item:
    item: Item = {
        "speaker": message.speaker,
        "user_id": message.user_id,
        "role": message.role.value,
        "text": message.text,
        "ts": _iso(message.ts),
    }
    if message.message_id:
        item["message_id"] = message.message_id
    return item


def _crude(entry: StmEntry | None) -> tuple[CrudeMessage, ...]:
    return entry.crude if entry is not None else ()


def _set_identity(
    expression: _Update,
    identity: StmRowIdentity,
    now: datetime,
    retention: timedelta,
    refresh: bool = True,
    describe: bool = False,
) -> None:
    """The row's identity; its privacy only when ``describe`` (else only on a new row)."""
    address = identity.address
    key = stm_row_key(address)
    expression.set("persona_id", address.persona_id)
    expression.set("channel_id", address.channel_id)
    expression.set("server_id" if address.guild_id else "user_id", address.guild_id or address.user_id)
    expression.set("lineage_id", identity.lineage_id)
    private = bool(identity.private and address.guild_id)
    expression.set(
        "gsi1pk", recency_partition(address, identity.lineage_id, private=private), if_missing=not describe
    )
    expression.set("private", private, if_missing=not describe)
    expression.set("private_thread", identity.private_thread, if_missing=not describe)
    if identity.described_at is not None:
        expression.set("described_at", _iso(identity.described_at), if_missing=not describe)
    expression.set("gsi2pk", age_shard(key))
    parent = identity.parent_channel_id
    if describe and address.guild_id and parent:
        expression.set("gsi3pk", thread_parent_partition(address.guild_id, parent))
    elif describe and address.guild_id:
        # a channel in a category is not a thread; an older row may hold the category as its parent
        expression.remove("parent_channel_id")
        expression.remove("gsi3pk")
    if parent:
        expression.set("parent_channel_id", parent)
    if identity.channel_name:
        expression.set("channel_name", identity.channel_name[:MAX_CHANNEL_NAME_CHARS])
    stamp = _iso(now)
    for name in ("last_updated", "gsi1sk", "gsi2sk"):
        expression.set(name, stamp, if_missing=not refresh)
    expression.set("expires_at", int((now + retention).timestamp()), if_missing=not refresh)


def _describes(identity: StmRowIdentity, read: StmEntry | None) -> bool:
    """Whether a capture re-stamps the row's privacy: unless it was described after this turn's look."""
    if read is None or read.described_at is None or read.private is None:
        return True
    return identity.described_at is not None and identity.described_at >= read.described_at


class _Update:
    """An UpdateExpression with every name and value aliased (no reserved-word surprises)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}
        self._sets: list[str] = []
        self._adds: list[str] = []
        self._removes: list[str] = []

    def name(self, attribute: str) -> str:
        alias = f"#{attribute}"
        self.names[alias] = attribute
        return alias

    def value(self, value: Any) -> str:
        alias = f":v{len(self.values)}"
        self.values[alias] = value
        return alias

    def set(self, attribute: str, value: Any, *, if_missing: bool = False) -> None:
        name, alias = self.name(attribute), self.value(value)
        self._sets.append(f"{name} = if_not_exists({name}, {alias})" if if_missing else f"{name} = {alias}")

    def add(self, attribute: str, amount: int) -> None:
        self._adds.append(f"{self.name(attribute)} {self.value(amount)}")

    def remove(self, attribute: str) -> None:
        self._removes.append(self.name(attribute))

    def has_changes(self) -> bool:
        return bool(self._sets or self._adds or self._removes)

    def text(self) -> str:
        clauses = []
        if self._sets:
            clauses.append("SET " + ", ".join(self._sets))
        if self._adds:
            clauses.append("ADD " + ", ".join(self._adds))
        if self._removes:
            clauses.append("REMOVE " + ", ".join(self._removes))
        return " ".join(clauses)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    return parse_time(str(value))


def _optional_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def crude_lines_to_items(lines: Iterable[CrudeMessage]) -> list[Item]:
    """Raw lines as stored items, for another store that keeps lines to capture later."""
    return [_crude_to_item(line) for line in lines]


def crude_lines_from_items(items: Iterable[Mapping[str, Any]]) -> tuple[CrudeMessage, ...]:
    return tuple(_crude_messages(items))
