""" "Why this answer?" on an alter persona's reply, on moto: read with the trace's lineage and named as
that persona (not the main persona's lineage and name)."""

from __future__ import annotations

from datetime import UTC, datetime

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.adapters.dynamodb.turn_repository import TurnRepository
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.privacy import Origin, Place
from kioku.domain.turn import TurnKey, TurnOutcome
from kioku.domain.why import MemoryUse, TurnTrace, UsedMemory, Visibility
from kioku.services.commands.why_answer import _memory_line
from kioku.services.why import why_this_answer

GUILD, GENERAL = "200000000000000001", "300000000000000001"
ALICE = "400000000000000001"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LUNA = Persona(persona_id="900000000000000001", lineage_id=2, name="Luna", alter=True)


def test_why_on_a_persona_s_reply_shows_her_lineage_s_memories_under_her_name(table):
    # Given Luna (a lineage of her own) and a public server memory of her lineage, which her turn recalled
    config = ConfigStore(table)
    config.save_server_config(ServerConfig(guild_id=GUILD, alters=(LUNA,)))
    ltm, stm = DynamoMemoryStore(table), StmStore(table)
    draft = MemoryDraft(
        MemoryScope.server(GUILD, LUNA.lineage_id),
        "{bot} teaches the chess club",
        ALICE,
        NOW,
        origin=Origin(GUILD, GENERAL, private=False),
    )
    memory_id = ltm.create(draft, limit=100).memory_id
    trace = TurnTrace(
        GUILD,
        GENERAL,
        LUNA.lineage_id,
        NOW,
        persona_id=LUNA.persona_id,
        channel_private=False,
        memories=(UsedMemory(ScopeKind.SERVER, GUILD, memory_id, MemoryUse.RECALLED),),
    )
    key = TurnKey("message", "500000000000000001", ALICE, NOW)
    TurnRepository(table, stm, ltm).commit(key, TurnOutcome(("600000000000000001",), trace=trace), NOW, None)

    # When Alice asks "Why this answer?" on Luna's reply
    answered = why_this_answer(
        "600000000000000001",
        ALICE,
        Place(GUILD, GENERAL),
        traces=TurnLedger(table).traces,
        config_store=config,
        ltm_store=ltm,
        stm_store=stm,
    )

    # Then she is shown the memory (not "a channel you can't see"), with {bot} read as Luna
    assert answered is not None and answered.persona_name == "Luna"
    (line,) = answered.explanation.memories
    assert line.visibility is Visibility.SHOWN
    assert "Luna teaches the chess club" in _memory_line(
        line, ALICE, Place(GUILD, GENERAL), answered.persona_name
    )
