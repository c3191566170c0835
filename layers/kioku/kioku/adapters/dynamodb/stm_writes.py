"""The writes to short-term memory rows: a turn's capture of its lines (``capture_turn``, in the
turn's commit), the ``update_short_term_memory`` tool's write and a person's hand edit
(``write_memory``), and the count of a turn whose lines are not kept (``count_turn``).

Every write stamps the row's identity (``_set_identity``): its keys in the ``Recency``,
``JanitorAge`` and ``ThreadParent`` indexes, ``last_updated`` and the TTL (``expires_at =
last_updated + STM_JANITOR_RETENTION_DAYS``, the janitor's backstop), and the channel's privacy as
the turn saw it. A capture rewrites the raw lines on the condition of the row's ``version``, so no
concurrent append is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final, cast

from kioku.adapters.dynamodb.errors import ConditionFailed, StoreError, TransactionCancelled
from kioku.adapters.dynamodb.forgetting import op_not_forgotten_since
from kioku.adapters.dynamodb.keys import (
    JANITOR_PK,
    JANITOR_SK,
    RECENCY_PK,
    RECENCY_SK,
    THREAD_PARENT_PK,
    age_shard,
    lines_note_key,
    recency_partition,
    stm_row_key,
    thread_parent_partition,
)
from kioku.adapters.dynamodb.stm_items import (
    MAX_CHANNEL_NAME_CHARS,
    crude_lines_to_items,
    entry_from_item,
    iso,
)
from kioku.adapters.dynamodb.table import KiokuTable, UpdateExpression, backoff
from kioku.domain.forgetting import Said, SpeakerForgotten
from kioku.domain.models import StmCategory
from kioku.domain.stm.capture import NewerMemoryExists, StmRowIdentity, TurnCapture
from kioku.domain.stm.categories import MAX_LABEL_CHARS, MAX_SLUG_CHARS
from kioku.domain.stm.entries import CrudeMessage, StmAddress, StmEntry, StmLimits, merge_crude
from kioku.domain.stm.update_tool import StmUpdate
from kioku.domain.turn import TurnAlreadyRecorded

ANY_TIME: Final = object()  # write_memory's default: any earlier write may be replaced
MAX_CAPTURE_ATTEMPTS: Final = 48


class CaptureConflict(StoreError):
    """The crude list kept changing under us; the capture gave up (nothing of it was stored)."""


class StmWrites:
    """Writes of short-term memory rows (see the module)."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

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
        expression = UpdateExpression()
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
        expression.set(written_at, iso(now))
        if reset_counter:
            expression.set("turns_since_refresh", 0)
        else:
            expression.set("turns_since_refresh", 0, if_missing=True)
        expression.set("version", 0, if_missing=True)
        if expect_written_at is ANY_TIME:
            condition = (
                f"attribute_not_exists({expression.name(written_at)}) OR "
                f"{expression.name(written_at)} <= {expression.value(iso(now))}"
            )
        elif expect_written_at is None:
            condition = f"attribute_not_exists({expression.name(written_at)})"
        else:
            condition = (
                f"{expression.name(written_at)} = {expression.value(iso(cast(datetime, expect_written_at)))}"
            )
        key = stm_row_key(identity.address)
        try:
            if said is None:
                self._table.update_with(key, expression, condition=condition)
                return
            self._table.transact_write(
                [
                    self._table.op_update_with(key, expression, condition=condition),
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
            expression = UpdateExpression()
            _set_identity(
                expression, identity, now, retention=limits.retention, describe=_describes(identity, read)
            )
            expression.set("crude", crude_lines_to_items(merge_crude(_crude(read), messages, now, limits)))
            expression.set("version", (read.version if read else 0) + 1)
            expression.add("turns_since_refresh", 1)
            if read is None:
                condition = "attribute_not_exists(pk)"
            else:
                condition = f"{expression.name('version')} = {expression.value(read.version)}"
            try:
                if also or checks:
                    row_update = self._table.op_update_with(
                        key,
                        expression,
                        condition=condition,
                    )
                    self._table.transact_write([row_update, *checks, *also])
                    return None
                item = self._table.update_with(
                    key,
                    expression,
                    condition=condition,
                    return_new=True,
                )
            except ConditionFailed as exc:
                read = entry_from_item(exc.old_item) if exc.old_item else self._stored(identity.address)
                backoff(attempt)
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
                    read = entry_from_item(row.old_item) if row.old_item else self._stored(identity.address)
                backoff(attempt)
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
        expression = UpdateExpression()
        _set_identity(expression, identity, now, limits.retention, refresh=False)
        expression.set("version", 0, if_missing=True)
        expression.add("turns_since_refresh", 1)
        key = stm_row_key(identity.address)
        if not also:
            self._table.update_with(key, expression)
            return
        row_update = self._table.op_update_with(key, expression)
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

    def _op_note_lines(self, user_id: str, address: StmAddress, now: datetime, retention: timedelta) -> dict:
        """The transaction operation that notes ``user_id``'s raw lines in ``address``'s row; the note
        expires with the row's retention."""
        note = lines_note_key(user_id, stm_row_key(address))
        return self._table.op_put({**note.as_item(), "expires_at": int((now + retention).timestamp())})

    def _stored(self, address: StmAddress) -> StmEntry | None:
        return entry_from_item(self._table.get(stm_row_key(address)))


def _already_captured(read: StmEntry, messages: Sequence[CrudeMessage]) -> bool:
    """A redelivered turn: every message of it is already in the row it would be appended to."""
    stored = {message.message_id for message in read.crude if message.message_id}
    return bool(messages) and all(message.message_id in stored for message in messages)


def _crude(entry: StmEntry | None) -> tuple[CrudeMessage, ...]:
    return entry.crude if entry is not None else ()


def _set_identity(
    expression: UpdateExpression,
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
        RECENCY_PK, recency_partition(address, identity.lineage_id, private=private), if_missing=not describe
    )
    expression.set("private", private, if_missing=not describe)
    expression.set("private_thread", identity.private_thread, if_missing=not describe)
    if identity.described_at is not None:
        expression.set("described_at", iso(identity.described_at), if_missing=not describe)
    expression.set(JANITOR_PK, age_shard(key))
    parent = identity.parent_channel_id
    if describe and address.guild_id and parent:
        expression.set(THREAD_PARENT_PK, thread_parent_partition(address.guild_id, parent))
    elif describe and address.guild_id:
        # a channel in a category is not a thread; an older row may hold the category as its parent
        expression.remove("parent_channel_id")
        expression.remove(THREAD_PARENT_PK)
    if parent:
        expression.set("parent_channel_id", parent)
    if identity.channel_name:
        expression.set("channel_name", identity.channel_name[:MAX_CHANNEL_NAME_CHARS])
    stamp = iso(now)
    for name in ("last_updated", RECENCY_SK, JANITOR_SK):
        expression.set(name, stamp, if_missing=not refresh)
    expression.set("expires_at", int((now + retention).timestamp()), if_missing=not refresh)


def _describes(identity: StmRowIdentity, read: StmEntry | None) -> bool:
    """Whether a capture re-stamps the row's privacy: unless it was described after this turn's look."""
    if read is None or read.described_at is None or read.private is None:
        return True
    return identity.described_at is not None and identity.described_at >= read.described_at
