"""The table's keys: every entity's key as docs/data-model.md gives it, the sort keys of each shared
partition prefix-free, no two entities ever sharing a key, every query reading its own entity and
nothing else; and no module above the adapters building or reading a key."""

from __future__ import annotations

import ast
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.adapters.dynamodb.keys import (
    AGE_SHARDS,
    ItemKey,
    KeyRange,
    age_shard,
    attempts_key,
    author_note_key,
    author_note_range,
    book_key,
    channel_row_range,
    channel_webhook_key,
    counter_key,
    dm_row_range,
    forgotten_key,
    guard_key,
    guild_row_range,
    index_by_key,
    lines_note_key,
    lines_note_range,
    memory_key,
    memory_range,
    noted_owner,
    noted_row,
    noted_server,
    outbox_key,
    outbox_range,
    pointed_outbox,
    rate_key,
    recency_partition,
    reply_key,
    server_config_key,
    server_note_key,
    server_note_range,
    shown_note_key,
    shown_note_range,
    stm_row_key,
    thread_parent_partition,
    turn_record_key,
    user_profile_key,
)
from kioku.domain.ltm.memory import MemoryScope, ScopeKind
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn_jobs import TurnSource

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "kioku" / "kioku"


# -- the keys as the data model gives them ------------------------------------------------------------


def test_every_key_is_spelled_as_the_data_model_says():
    guild_row, dm_row = StmAddress.of("9", "7", "100", "kioku"), StmAddress.of(None, "7", "100", "kioku")
    server_scope, personal_scope = MemoryScope.server("9", 2), MemoryScope.personal("7", 2)
    assert [
        server_config_key("9"),
        channel_webhook_key("9", "100"),
        user_profile_key("7"),
        forgotten_key("7"),
        rate_key("7", 29_000_000),
        outbox_key("7", "message", "55"),
        turn_record_key("message", "55"),
        attempts_key("message", "55"),
        stm_row_key(guild_row),
        stm_row_key(dm_row),
        lines_note_key("7", stm_row_key(guild_row)),
        server_note_key("7", "9"),
        author_note_key("7", "8"),
        memory_key(ScopeKind.SERVER, "9", "12345"),
        memory_key(ScopeKind.PERSONAL, "7", "12345"),
        guard_key(server_scope, "f00d", "s"),
        counter_key(ScopeKind.PERSONAL, "7"),
        book_key(server_scope),
        book_key(server_scope, 3),
        book_key(personal_scope, 1),
        reply_key("66"),
        shown_note_key("7", "message", "55"),
    ] == [
        ("SERVER#9", "CONFIG"),
        ("SERVER#9", "WEBHOOK#100"),
        ("USER#7", "PROFILE"),
        ("USER#7", "FORGOTTEN"),
        ("USER#7", "RATE#29000000"),
        ("USER#7", "OUTBOX#message#55"),
        ("TURN#message#55", "DONE"),
        ("TURN#message#55", "ATTEMPTS"),
        ("STM#S#9", "C#100#P#kioku"),
        ("STM#U#7", "DM#P#kioku"),
        ("USER#7", "STMLINES#STM#S#9|C#100#P#kioku"),
        ("USER#7", "SERVERLTM#9"),
        ("USER#7", "SAVEDABOUT#8"),
        ("LTM#S#9", "M#12345"),
        ("USER#7", "M#12345"),
        ("LTM#S#9", "H#2#s#f00d"),
        ("USER#7", "COUNT"),
        ("LTM#S#9", "BOOK#L2"),
        ("LTM#S#9", "BOOK#L2#3"),
        ("USER#7", "LTM#BOOK#L2#1"),
        ("REPLY#66", "TURN"),
        ("USER#7", "SHOWN#message#55"),
    ]
    assert shown_note_range("7").holds(shown_note_key("7", "message", "55"))
    assert recency_partition(guild_row, 2) == "STM#S#9#L#2"
    assert recency_partition(guild_row, 2, private=True) == "STM#S#9#L#2#PRIVATE"
    assert recency_partition(dm_row, 2, private=True) == "STM#U#7#L#2"  # a DM has no private partition
    assert thread_parent_partition("9", "100") == "STM#S#9#PARENT#100"
    assert ItemKey("STM#S#9", "C#100#P#kioku").as_item() == {"pk": "STM#S#9", "sk": "C#100#P#kioku"}


# -- the shared partitions: each store's sort keys begin with a word of their own ---------------------

SHARED_PARTITIONS = {
    "USER#": {
        "profile (config_store)": "PROFILE",
        "forget-all mark (forgetting)": "FORGOTTEN",
        "turns per minute (turn_ledger)": "RATE#",
        "outbox and pointer (turn_repository)": "OUTBOX#",
        "raw-lines note (stm_writes)": "STMLINES#",
        "server-memory note (ltm_store)": "SERVERLTM#",
        "personal memory (ltm_store)": "M#",
        "personal duplicate guard (ltm_store)": "H#",
        "personal counter (ltm_store)": "COUNT",
        "personal book (ltm_store)": "LTM#BOOK#L",
        "memories a turn was shown (turn_traces)": "SHOWN#",
    },
    "LTM#S#": {
        "memory": "M#",
        "duplicate guard": "H#",
        "counter": "COUNT",
        "book": "BOOK#L",
        "removed by its subject": "REMOVED#",
    },
    "SERVER#": {"configuration (config_store)": "CONFIG", "channel webhook (webhook_store)": "WEBHOOK#"},
    "STM#S#": {"channel row": "C#"},
    "STM#U#": {"DM row": "DM#P#"},
    "TURN#": {"completion record": "DONE", "failed attempts": "ATTEMPTS"},
}


@pytest.mark.parametrize("partition", SHARED_PARTITIONS)
def test_the_sort_keys_of_a_shared_partition_are_prefix_free(partition):
    words = SHARED_PARTITIONS[partition]
    for name, word in words.items():
        for other, other_word in words.items():
            assert other == name or not other_word.startswith(word), f"{other} reads as {name}"


@pytest.mark.parametrize("partition", SHARED_PARTITIONS)
def test_no_partition_of_one_kind_is_a_partition_of_another(partition):
    assert [other for other in SHARED_PARTITIONS if other != partition and other.startswith(partition)] == []


# -- every entity's keys over any ids ------------------------------------------------------------------

SNOWFLAKES = st.one_of(st.sampled_from(["1", "12", "120"]), st.integers(0, 2**64 - 1).map(str))


@dataclass(frozen=True)
class Ids:
    """The ids one entity's key is made of; the small pool makes two entities often share them."""

    user: str
    server: str
    channel: str
    turn: str
    persona: str
    lineage: int
    memory: str
    shard: int
    fingerprint: str
    domain: str
    source: str
    minute: int


IDS = st.builds(
    Ids,
    user=SNOWFLAKES,
    server=SNOWFLAKES,
    channel=SNOWFLAKES,
    turn=SNOWFLAKES,
    persona=st.one_of(st.just("kioku"), st.text(min_size=1, max_size=12)),
    lineage=st.integers(0, 1000),
    memory=st.integers(10000, 99999).map(str),
    shard=st.integers(0, 50),
    fingerprint=st.text("0123456789abcdef", min_size=64, max_size=64),
    domain=st.one_of(
        st.sampled_from(["s", "self"]),
        SNOWFLAKES.map(lambda channel: f"c{channel}"),
        st.tuples(SNOWFLAKES, SNOWFLAKES).map(lambda ids: f"a{ids[0]}:g{ids[1]}"),
    ),
    source=st.sampled_from([source.value for source in TurnSource]),
    minute=st.integers(0, 2**40),
)


def _guild_row(ids: Ids) -> StmAddress:
    return StmAddress.of(ids.server, ids.user, ids.channel, ids.persona)


def _scope(kind: ScopeKind, ids: Ids) -> MemoryScope:
    return MemoryScope(kind, ids.user if kind is ScopeKind.PERSONAL else ids.server, ids.lineage)


def _owner(kind: ScopeKind, ids: Ids) -> str:
    return _scope(kind, ids).owner_id


ENTITIES: dict[str, Callable[[Ids], ItemKey]] = {
    "server config": lambda ids: server_config_key(ids.server),
    "profile": lambda ids: user_profile_key(ids.user),
    "forget-all mark": lambda ids: forgotten_key(ids.user),
    "rate": lambda ids: rate_key(ids.user, ids.minute),
    "outbox": lambda ids: outbox_key(ids.user, ids.source, ids.turn),
    "turn record": lambda ids: turn_record_key(ids.source, ids.turn),
    "attempts": lambda ids: attempts_key(ids.source, ids.turn),
    "guild row": lambda ids: stm_row_key(_guild_row(ids)),
    "DM row": lambda ids: stm_row_key(StmAddress.of(None, ids.user, ids.channel, ids.persona)),
    "raw-lines note": lambda ids: lines_note_key(ids.user, stm_row_key(_guild_row(ids))),
    "server-memory note": lambda ids: server_note_key(ids.user, ids.server),
    "author note": lambda ids: author_note_key(ids.user, ids.server),
    **{
        f"{kind.value} {name}": make
        for kind in ScopeKind
        for name, make in {
            "memory": lambda ids, kind=kind: memory_key(kind, _owner(kind, ids), ids.memory),
            "guard": lambda ids, kind=kind: guard_key(_scope(kind, ids), ids.fingerprint, ids.domain),
            "counter": lambda ids, kind=kind: counter_key(kind, _owner(kind, ids)),
            "book": lambda ids, kind=kind: book_key(_scope(kind, ids), ids.shard),
        }.items()
    },
}


@dataclass(frozen=True)
class Query:
    key_range: Callable[[Ids], KeyRange]
    reads: str
    """The entity the query is for."""
    same: Callable[[Ids, Ids], bool]
    """Whether a key of that entity made of the second ids is one the query made of the first wants."""


QUERIES = {
    "a person's outboxes (forget-all)": Query(
        lambda ids: outbox_range(ids.user), "outbox", lambda q, k: q.user == k.user
    ),
    "a person's raw-lines notes": Query(
        lambda ids: lines_note_range(ids.user), "raw-lines note", lambda q, k: q.user == k.user
    ),
    "a person's server-memory notes": Query(
        lambda ids: server_note_range(ids.user), "server-memory note", lambda q, k: q.user == k.user
    ),
    "a person's author notes": Query(
        lambda ids: author_note_range(ids.user), "author note", lambda q, k: q.user == k.user
    ),
    **{
        f"an owner's {kind.value} memories": Query(
            lambda ids, kind=kind: memory_range(kind, _owner(kind, ids)),
            f"{kind.value} memory",
            lambda q, k, kind=kind: _owner(kind, q) == _owner(kind, k),
        )
        for kind in ScopeKind
    },
    "a guild's channel list": Query(
        lambda ids: guild_row_range(ids.server), "guild row", lambda q, k: q.server == k.server
    ),
    "a channel's rows (channel events)": Query(
        lambda ids: channel_row_range(ids.server, ids.channel),
        "guild row",
        lambda q, k: (q.server, q.channel) == (k.server, k.channel),
    ),
    "a person's DM rows": Query(lambda ids: dm_row_range(ids.user), "DM row", lambda q, k: q.user == k.user),
}


@settings(max_examples=300, deadline=None)
@given(IDS, IDS)
def test_keys_of_two_entities_never_coincide(first, second):
    for name, make in ENTITIES.items():
        for other, make_other in ENTITIES.items():
            if other != name:
                assert make(first) != make_other(second), f"a {name} key is a {other} key"


@settings(max_examples=300, deadline=None)
@given(IDS, IDS)
def test_every_query_reads_the_keys_of_its_own_entity_and_no_other(asked, stored):
    for query_name, query in QUERIES.items():
        key_range = query.key_range(asked)
        for name, make in ENTITIES.items():
            wanted = name == query.reads and query.same(asked, stored)
            assert key_range.holds(make(stored)) == wanted, f"{query_name} and a {name} key"
        assert key_range.holds(ENTITIES[query.reads](asked)), f"{query_name} misses its own key"


@settings(max_examples=200, deadline=None)
@given(IDS)
def test_a_note_names_the_item_it_notes_and_a_pointer_its_outbox(ids):
    row = stm_row_key(_guild_row(ids))
    assert noted_row(lines_note_key(ids.user, row)) == row
    assert noted_server(server_note_key(ids.user, ids.server)) == ids.server
    assert noted_owner(author_note_key(ids.user, ids.server)) == ids.server
    pointer = outbox_key(ids.user, ids.source, ids.turn)
    assert pointed_outbox(pointer, ids.server) == outbox_key(ids.server, ids.source, ids.turn)


@settings(max_examples=200, deadline=None)
@given(IDS)
def test_a_rows_age_shard_is_the_one_its_stored_rows_carry(ids):
    for row in (stm_row_key(_guild_row(ids)), stm_row_key(StmAddress.of(None, ids.user, "1", ids.persona))):
        assert age_shard(row) == f"STMAGE#{zlib.crc32(f'{row.pk}|{row.sk}'.encode()) % AGE_SHARDS}"


def test_items_are_indexed_by_their_key():
    items = [{"pk": "USER#7", "sk": "PROFILE", "privacy_level": "full"}, {"pk": "USER#7", "sk": "FORGOTTEN"}]
    assert index_by_key(items)[user_profile_key("7")]["privacy_level"] == "full"
    assert set(index_by_key(items)) == {user_profile_key("7"), forgotten_key("7")}


# -- above the adapters, no key is built or read ------------------------------------------------------

KEY_ATTRIBUTES = frozenset({"pk", "sk"})
KEY_NAMES = ("_key", "_range", "_partition", "_pk")


def key_handling(source: str) -> list[str]:
    """What in ``source`` builds or reads an item key: an import of the keys module or of a key
    function from an adapter, or ``"pk"``/``"sk"`` as a subscript, a ``.get`` or a dict key."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kioku.adapters"):
            for alias in node.names:
                if node.module == "kioku.adapters.dynamodb.keys" or alias.name == "keys":
                    found.append(f"line {node.lineno}: imports from the keys module")
                elif alias.name.endswith(KEY_NAMES) or alias.name in {"ItemKey", "KeyRange", "index_by_key"}:
                    found.append(f"line {node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: imports the keys module"
                for alias in node.names
                if alias.name == "kioku.adapters.dynamodb.keys"
            ]
        elif isinstance(node, ast.Subscript) and _is_key_attribute(node.slice):
            found.append(f"line {node.lineno}: indexes {node.slice.value!r}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and _is_key_attribute(node.args[0])
        ):
            found.append(f"line {node.lineno}: gets {node.args[0].value!r}")
        elif isinstance(node, ast.Dict):
            found += [f"line {node.lineno}: builds {k.value!r}" for k in node.keys if _is_key_attribute(k)]
    return found


def _is_key_attribute(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in KEY_ATTRIBUTES


def test_the_scan_finds_each_way_a_module_could_handle_keys():
    found = key_handling(
        "from kioku.adapters.dynamodb.keys import ItemKey\n"
        "from kioku.adapters.dynamodb import keys\n"
        "import kioku.adapters.dynamodb.keys\n"
        "from kioku.adapters.dynamodb.forgetting import forgotten_key\n"
        "item['pk'], item.get('sk'), {'pk': 1}\n"
    )
    assert sorted(found) == [
        "line 1: imports from the keys module",
        "line 2: imports from the keys module",
        "line 3: imports the keys module",
        "line 4: imports forgotten_key",
        "line 5: builds 'pk'",
        "line 5: gets 'sk'",
        "line 5: indexes 'pk'",
    ]
    assert key_handling("from kioku.adapters.dynamodb.stm_store import StmStore\nitem['text']\n") == []


def test_no_module_above_the_adapters_builds_or_reads_an_item_key():
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if "adapters" not in path.relative_to(PACKAGE).parts
        and (found := key_handling(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
