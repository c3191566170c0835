"""Every key of the kioku table: each item's partition and sort key, the key ranges the queries
read, and the partitions of the indexes. The stores build every key here and nowhere else
(docs/data-model.md describes the items).

    partition               sort key                           item (store)
    SERVER#{guild}          CONFIG                             server configuration (config_store)
                            WEBHOOK#{channel}                  a channel's persona webhook (webhook_store)
                            REMOVAL                            kioku removed from the server: its data
                                                               is deleted after the grace (server_removal)
    USER#{user}             PROFILE                            profile (config_store)
                            FORGOTTEN                          forget-all mark (forgetting)
                            RATE#{unix minute}                 turns that minute (turn_ledger)
                            OUTBOX#{source}#{turn}             a turn's outbox, or a pointer to one
                                                               (turn_repository)
                            STMLINES#{row pk}|{row sk}         a row holding their raw lines (stm_writes)
                            SERVERLTM#{server}                 a server whose memories name them (ltm_store)
                            SAVEDABOUT#{user}                  someone they saved personal memories
                                                               about (ltm_store)
                            SHOWN#{source}#{turn}              their memories a turn was shown
                                                               (turn_traces)
                            M#{id}, H#{lineage}#{domain}#{fingerprint}, COUNT, LTM#BOOK#L{lineage}[#{shard}]
                                                               their personal memories (ltm_store)
    LTM#S#{server}          M#{id}, H#…, COUNT, BOOK#L{lineage}[#{shard}]   server memories (ltm_store)
                            REMOVED#{random}                   one its subject removed, counted only
                                                               (ltm_store)
    STM#S#{server}          C#{channel}#P#{persona}            a guild channel's short-term memory row
    STM#U#{user}            DM#P#{persona}                     a DM's short-term memory row
    TURN#{source}#{turn}    DONE, ATTEMPTS                     a turn's completion record, its failed attempts
    REPLY#{message}         TURN                               the turn a posted reply answered (turn_traces)

    Recency       gsi1pk = {STM pk}#L#{lineage}, + "#PRIVATE" for a private channel's row
    JanitorAge    gsi2pk = STMAGE#{0..7} (rows, by last update); LTMEXPIRY#{0..7} (memories that
                  expire, by expiry); REMOVALS (a server's REMOVAL, by when it was removed)
    ThreadParent  gsi3pk = {STM pk}#PARENT#{parent channel}; SAIDIN#{guild} (a personal memory said
                  in that server, so its removal finds them without a scan)

Four stores share a person's ``USER#`` partition: each of their sort keys begins with a word of its
own, so no query's prefix reads another store's items (tests/unit/test_item_keys.py proves it).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

from kioku.domain.ltm.memory import MemoryScope, ScopeKind
from kioku.domain.stm.entries import StmAddress

Item = dict[str, Any]

SERVER_PARTITION: Final = "SERVER#"
USER_PARTITION: Final = "USER#"
SERVER_MEMORY_PARTITION: Final = "LTM#S#"
GUILD_STM_PARTITION: Final = "STM#S#"
DM_STM_PARTITION: Final = "STM#U#"
TURN_PARTITION: Final = "TURN#"
REPLY_PARTITION: Final = "REPLY#"

CONFIG: Final = "CONFIG"
WEBHOOK_PREFIX: Final = "WEBHOOK#"
PROFILE: Final = "PROFILE"
FORGOTTEN: Final = "FORGOTTEN"
RATE_PREFIX: Final = "RATE#"
OUTBOX_PREFIX: Final = "OUTBOX#"
LINES_NOTE_PREFIX: Final = "STMLINES#"
SERVER_NOTE_PREFIX: Final = "SERVERLTM#"
AUTHOR_NOTE_PREFIX: Final = "SAVEDABOUT#"
SHOWN_NOTE_PREFIX: Final = "SHOWN#"
REMOVED_PREFIX: Final = "REMOVED#"
MEMORY_PREFIX: Final = "M#"
GUARD_PREFIX: Final = "H#"
COUNTER: Final = "COUNT"
BOOK_PREFIX: Final = {ScopeKind.SERVER: "BOOK#L", ScopeKind.PERSONAL: "LTM#BOOK#L"}
CHANNEL_ROW_PREFIX: Final = "C#"
DM_ROW_PREFIX: Final = "DM#P#"
DONE: Final = "DONE"
ATTEMPTS: Final = "ATTEMPTS"
REPLIED_TURN: Final = "TURN"
SERVER_REMOVAL: Final = "REMOVAL"

RECENCY_INDEX: Final = "Recency"
RECENCY_PK: Final = "gsi1pk"
RECENCY_SK: Final = "gsi1sk"
JANITOR_INDEX: Final = "JanitorAge"
JANITOR_PK: Final = "gsi2pk"
JANITOR_SK: Final = "gsi2sk"
THREAD_PARENT_INDEX: Final = "ThreadParent"
THREAD_PARENT_PK: Final = "gsi3pk"

AGE_SHARDS: Final = 8
_AGE_SHARD_PREFIX: Final = "STMAGE#"
REMOVALS_PARTITION: Final = "REMOVALS"
"""The ``JanitorAge`` partition of the servers kioku was removed from (``server_removal_key``)."""
_SAID_IN_PREFIX: Final = "SAIDIN#"
_EXPIRY_SHARD_PREFIX: Final = "LTMEXPIRY#"
_SHOWN_SHARD_PREFIX: Final = "LTMSHOWN#"
_USAGE_MARK: Final = ("JANITOR", "LASTSHOWN")
_PRIVATE_SUFFIX: Final = "#PRIVATE"
_PAIR_SEPARATOR: Final = "|"


class ItemKey(NamedTuple):
    """An item's primary key: the one spelling of a (pk, sk) pair."""

    pk: str
    sk: str

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> ItemKey:
        """The key of a stored item (or of a query's keys-only result)."""
        return cls(str(item["pk"]), str(item["sk"]))

    def as_item(self) -> dict[str, str]:
        """The key as attributes: what a request addresses, and how a new item starts."""
        return {"pk": self.pk, "sk": self.sk}

    def joined(self) -> str:
        """``pk|sk``: the key as one string, where another item refers to this one."""
        return f"{self.pk}{_PAIR_SEPARATOR}{self.sk}"


class KeyRange(NamedTuple):
    """What one key-condition query reads: the items of partition ``pk`` whose sort key begins with
    ``prefix`` (every item of the partition when it is empty)."""

    pk: str
    prefix: str = ""

    def holds(self, key: ItemKey) -> bool:
        return key.pk == self.pk and key.sk.startswith(self.prefix)


def index_by_key(items: Iterable[Item]) -> dict[ItemKey, Item]:
    """Items by their key, as read together in one BatchGetItem."""
    return {ItemKey.of(item): item for item in items}


# -- partitions ---------------------------------------------------------------------------------------


def user_pk(user_id: str) -> str:
    """A person's partition: their profile, marks, notes, outboxes and personal memories."""
    return f"{USER_PARTITION}{user_id}"


def owner_pk(kind: ScopeKind, owner_id: str) -> str:
    """The partition of an owner's long-term memories: a server's own, or the person's ``USER#``."""
    if kind is ScopeKind.PERSONAL:
        return user_pk(owner_id)
    return f"{SERVER_MEMORY_PARTITION}{owner_id}"


def _stm_pk(address: StmAddress) -> str:
    if address.guild_id:
        return _guild_stm_pk(address.guild_id)
    return _dm_stm_pk(address.user_id or "")


def _guild_stm_pk(guild_id: str) -> str:
    return f"{GUILD_STM_PARTITION}{guild_id}"


def _dm_stm_pk(user_id: str) -> str:
    return f"{DM_STM_PARTITION}{user_id}"


def _turn_pk(source: str, turn_id: str) -> str:
    return f"{TURN_PARTITION}{source}#{turn_id}"


# -- server configuration and people ---------------------------------------------------------------------


def server_config_key(guild_id: str) -> ItemKey:
    return ItemKey(f"{SERVER_PARTITION}{guild_id}", CONFIG)


def channel_webhook_key(guild_id: str, channel_id: str) -> ItemKey:
    """The webhook kioku's alter personas speak through in a channel (a thread's: its parent's)."""
    return ItemKey(f"{SERVER_PARTITION}{guild_id}", f"{WEBHOOK_PREFIX}{channel_id}")


def channel_webhook_range(guild_id: str) -> KeyRange:
    """Every channel webhook of a server."""
    return KeyRange(f"{SERVER_PARTITION}{guild_id}", WEBHOOK_PREFIX)


def server_range(guild_id: str) -> KeyRange:
    """A server's whole ``SERVER#`` partition: its configuration, webhooks and removal mark."""
    return KeyRange(f"{SERVER_PARTITION}{guild_id}")


def server_removal_key(guild_id: str) -> ItemKey:
    """The mark that kioku was removed from a server (``GUILD_DELETE``), until its data is deleted."""
    return ItemKey(f"{SERVER_PARTITION}{guild_id}", SERVER_REMOVAL)


def removed_server(mark: ItemKey) -> str:
    """The server a ``server_removal_key`` mark names."""
    return mark.pk[len(SERVER_PARTITION) :]


def user_profile_key(user_id: str) -> ItemKey:
    return ItemKey(user_pk(user_id), PROFILE)


def forgotten_key(user_id: str) -> ItemKey:
    """The mark of a person's last ``/personal memories forget-all``."""
    return ItemKey(user_pk(user_id), FORGOTTEN)


def rate_key(user_id: str, minute: int) -> ItemKey:
    """A person's turns in the unix minute ``minute``."""
    return ItemKey(user_pk(user_id), f"{RATE_PREFIX}{minute}")


# -- turns ------------------------------------------------------------------------------------------------


def turn_record_key(source: str, turn_id: str) -> ItemKey:
    """The record that a turn is done."""
    return ItemKey(_turn_pk(source, turn_id), DONE)


def attempts_key(source: str, turn_id: str) -> ItemKey:
    """The count of a turn's failed attempts."""
    return ItemKey(_turn_pk(source, turn_id), ATTEMPTS)


def turn_of_record(record: ItemKey) -> tuple[str, str]:
    """The source and turn id of the turn whose record (``turn_record_key``) is ``record``."""
    source, turn_id = record.pk[len(TURN_PARTITION) :].split("#", 1)
    return source, turn_id


def outbox_key(person_id: str, source: str, turn_id: str) -> ItemKey:
    """A turn's outbox in its author's partition, or a pointer to it in the partition of someone its
    notices quote: the same sort key either way."""
    return ItemKey(user_pk(person_id), f"{OUTBOX_PREFIX}{source}#{turn_id}")


def reply_key(message_id: str) -> ItemKey:
    """The pointer from a posted reply (any of its messages) to the turn it answered."""
    return ItemKey(f"{REPLY_PARTITION}{message_id}", REPLIED_TURN)


def removed_note_key(guild_id: str, token: str) -> ItemKey:
    """A note that the person a server memory was about removed it (counted for the server's
    managers): ``token`` is random, so the note names neither the memory nor the person."""
    return ItemKey(f"{SERVER_MEMORY_PARTITION}{guild_id}", f"{REMOVED_PREFIX}{token}")


def removed_note_range(guild_id: str) -> KeyRange:
    return KeyRange(f"{SERVER_MEMORY_PARTITION}{guild_id}", REMOVED_PREFIX)


def shown_note_key(user_id: str, source: str, turn_id: str) -> ItemKey:
    """The note that a turn was shown memories about ``user_id`` (or their DM's short-term memory)."""
    return ItemKey(user_pk(user_id), f"{SHOWN_NOTE_PREFIX}{source}#{turn_id}")


def shown_note_range(user_id: str) -> KeyRange:
    return KeyRange(user_pk(user_id), SHOWN_NOTE_PREFIX)


def outbox_range(user_id: str) -> KeyRange:
    """Every outbox answering ``user_id`` and every pointer to one quoting them."""
    return KeyRange(user_pk(user_id), OUTBOX_PREFIX)


def pointed_outbox(pointer: ItemKey, author_id: str) -> ItemKey:
    """The outbox ``pointer`` points to: the same sort key, in the partition of the turn's author."""
    return ItemKey(user_pk(author_id), pointer.sk)


# -- short-term memory --------------------------------------------------------------------------------------


def stm_row_key(address: StmAddress) -> ItemKey:
    """A guild row per (server, channel, persona); a DM row per (user, persona): Discord gives a
    user exactly one DM channel with the bot, so the key needs no channel and a guild turn can
    fetch the user's DM row (cross-server folding) in its first BatchGetItem."""
    if address.guild_id:
        return ItemKey(_stm_pk(address), f"{CHANNEL_ROW_PREFIX}{address.channel_id}#P#{address.persona_id}")
    return ItemKey(_stm_pk(address), f"{DM_ROW_PREFIX}{address.persona_id}")


def guild_row_range(guild_id: str) -> KeyRange:
    """Every channel's and thread's row of a server, every persona."""
    return KeyRange(_guild_stm_pk(guild_id), CHANNEL_ROW_PREFIX)


def channel_row_range(guild_id: str, channel_id: str) -> KeyRange:
    """The rows of one channel of a server, one per persona."""
    return KeyRange(_guild_stm_pk(guild_id), f"{CHANNEL_ROW_PREFIX}{channel_id}#P#")


def dm_row_range(user_id: str) -> KeyRange:
    """Every DM row of a person, one per persona: their whole DM partition."""
    return KeyRange(_dm_stm_pk(user_id))


def lines_note_key(user_id: str, row: ItemKey) -> ItemKey:
    """A note, in the person's partition, that they have raw lines in ``row``: how forget-all and
    the export find them without a scan."""
    return ItemKey(user_pk(user_id), f"{LINES_NOTE_PREFIX}{row.joined()}")


def lines_note_range(user_id: str) -> KeyRange:
    return KeyRange(user_pk(user_id), LINES_NOTE_PREFIX)


def noted_row(note: ItemKey) -> ItemKey:
    """The row a ``lines_note_key`` note names."""
    pk, _, sk = note.sk[len(LINES_NOTE_PREFIX) :].partition(_PAIR_SEPARATOR)
    return ItemKey(pk, sk)


def recency_partition(address: StmAddress, lineage_id: int, *, private: bool = False) -> str:
    """The ``Recency`` partition of a scope (a server, or a user's DMs) and persona lineage; a
    server's private channels have their own."""
    partition = f"{_stm_pk(address)}#L#{lineage_id}"
    return f"{partition}{_PRIVATE_SUFFIX}" if private and address.guild_id else partition


def thread_parent_partition(guild_id: str, parent_channel_id: str) -> str:
    """The ``ThreadParent`` partition of a channel's threads."""
    return f"{_guild_stm_pk(guild_id)}#PARENT#{parent_channel_id}"


def age_shard(row: ItemKey) -> str:
    """The ``JanitorAge`` partition of a row: rows spread over ``AGE_SHARDS`` partitions."""
    return age_shard_partition(zlib.crc32(row.joined().encode()) % AGE_SHARDS)


def age_shard_partition(shard: int) -> str:
    return f"{_AGE_SHARD_PREFIX}{shard}"


def expiry_shard(memory: ItemKey) -> str:
    """The ``JanitorAge`` partition of a memory that expires (sorted there by its expiry): memories
    spread over ``AGE_SHARDS`` partitions of their own, apart from the rows'."""
    return expiry_shard_partition(zlib.crc32(memory.joined().encode()) % AGE_SHARDS)


def expiry_shard_partition(shard: int) -> str:
    return f"{_EXPIRY_SHARD_PREFIX}{shard}"


def shown_shard(record: ItemKey) -> str:
    """The ``JanitorAge`` partition of a turn record that names memories it was shown (sorted there by
    when it was committed), for the janitor to fold into each memory's ``last_shown``."""
    return shown_shard_partition(zlib.crc32(record.joined().encode()) % AGE_SHARDS)


def shown_shard_partition(shard: int) -> str:
    return f"{_SHOWN_SHARD_PREFIX}{shard}"


def usage_mark_key() -> ItemKey:
    """How far the janitor has folded each ``shown_shard`` partition (its resume point)."""
    return ItemKey(*_USAGE_MARK)


# -- long-term memory ---------------------------------------------------------------------------------------


def memory_key(kind: ScopeKind, owner_id: str, memory_id: str) -> ItemKey:
    return ItemKey(owner_pk(kind, owner_id), f"{MEMORY_PREFIX}{memory_id}")


def memory_range(kind: ScopeKind, owner_id: str) -> KeyRange:
    """Every memory of an owner, every lineage."""
    return KeyRange(owner_pk(kind, owner_id), MEMORY_PREFIX)


def server_memory_range(guild_id: str) -> KeyRange:
    """A server's whole long-term memory partition: memories, guards, counter, books, notes."""
    return KeyRange(owner_pk(ScopeKind.SERVER, guild_id))


def said_in_partition(guild_id: str) -> str:
    """The ``ThreadParent`` partition of the personal memories said in a server (its removal's)."""
    return f"{_SAID_IN_PREFIX}{guild_id}"


def personal_memory_of(key: ItemKey) -> tuple[str, str]:
    """The owner and id of the personal memory whose key is ``key``."""
    return key.pk[len(USER_PARTITION) :], key.sk[len(MEMORY_PREFIX) :]


def memory_trail_range(kind: ScopeKind, owner_id: str, memory_id: str) -> KeyRange:
    """Whatever a memory keeps beside its item under ``M#{id}#`` (its earlier texts): removed with it."""
    return KeyRange(owner_pk(kind, owner_id), f"{MEMORY_PREFIX}{memory_id}#")


def guard_key(scope: MemoryScope, fingerprint: str, domain: str) -> ItemKey:
    """The duplicate guard of a fact within a scope and duplicate domain (see ``duplicate_domain``)."""
    return ItemKey(
        owner_pk(scope.kind, scope.owner_id), f"{GUARD_PREFIX}{scope.lineage}#{domain}#{fingerprint}"
    )


def counter_key(kind: ScopeKind, owner_id: str) -> ItemKey:
    return ItemKey(owner_pk(kind, owner_id), COUNTER)


def book_key(scope: MemoryScope, shard: int = 0) -> ItemKey:
    """The key of one shard of a scope's book; shard 0 has the key books had before they were sharded."""
    suffix = f"#{shard}" if shard else ""
    return ItemKey(owner_pk(scope.kind, scope.owner_id), f"{BOOK_PREFIX[scope.kind]}{scope.lineage}{suffix}")


def server_note_key(user_id: str, guild_id: str) -> ItemKey:
    """The note, in a person's partition, that memories of ``guild_id`` name them."""
    return ItemKey(user_pk(user_id), f"{SERVER_NOTE_PREFIX}{guild_id}")


def server_note_range(user_id: str) -> KeyRange:
    return KeyRange(user_pk(user_id), SERVER_NOTE_PREFIX)


def noted_server(note: ItemKey) -> str:
    """The server a ``server_note_key`` note names."""
    return note.sk[len(SERVER_NOTE_PREFIX) :]


def author_note_key(author_id: str, owner_id: str) -> ItemKey:
    """The note, in a person's partition, that they saved personal memories about ``owner_id``."""
    return ItemKey(user_pk(author_id), f"{AUTHOR_NOTE_PREFIX}{owner_id}")


def author_note_range(author_id: str) -> KeyRange:
    return KeyRange(user_pk(author_id), AUTHOR_NOTE_PREFIX)


def noted_owner(note: ItemKey) -> str:
    """The person an ``author_note_key`` note names."""
    return note.sk[len(AUTHOR_NOTE_PREFIX) :]
