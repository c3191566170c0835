"""A turn's read of its short-term memory: the current row, and the scope's other rows worth showing.

A turn loads its state in two requests: one BatchGetItem (server config, user profile, the current
row, in a thread its parent's row, and in a guild the user's DM row for cross-server folding) and one
Query on ``Recency`` for the scope's other public rows, newest first. Private channels' rows sit in a
partition of their own, so that Query never returns them; it is read only where a server's settings
may show them (the bypass, or a channel overridden to public). Every row read is filtered again by
``may_recall_row``: a row never described (written before privacy was recorded) counts as private.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from kioku.adapters.dynamodb.config_store import server_config_from_item, user_profile_from_item
from kioku.adapters.dynamodb.keys import (
    RECENCY_INDEX,
    RECENCY_PK,
    RECENCY_SK,
    ItemKey,
    index_by_key,
    recency_partition,
    server_config_key,
    stm_row_key,
    user_profile_key,
)
from kioku.adapters.dynamodb.stm_items import entries_from_items, entry_from_item, iso
from kioku.adapters.dynamodb.table import Cursor, KiokuTable
from kioku.domain.privacy import Place, PrivacyMode
from kioku.domain.stm.context import StmState
from kioku.domain.stm.entries import StmAddress, StmEntry, has_live_content, may_recall_row
from kioku.domain.turn_read import TurnMemoryLoad, TurnMemoryQuery

MAX_RECENT_PAGES: Final = 4
_PAGE_SLACK: Final = 2
_MAX_PRIVATE_SLACK: Final = 10


class StmReads:
    """Reads of short-term memory rows: one row, and a turn's whole short-term memory."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def get(self, address: StmAddress) -> StmEntry | None:
        return entry_from_item(self._table.get(stm_row_key(address)))

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
        stored = server_config_from_item(config_item, guild_id)
        config = stored.speaking_as(query.speaking) if guild_id else stored
        profile = user_profile_from_item(found.get(user_profile_key(user_id)), user_id)
        if config is None:
            empty = StmState(None, ())
            return TurnMemoryLoad(config=stored, profile=profile, state=empty, extra=found, persona_gone=True)

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
                and entry.address.persona_id == persona_id  # a lineage's sharers keep rows apart
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
                names={"#pk": RECENCY_PK, "#sk": RECENCY_SK},
                values={":pk": partition, ":since": iso(active_since)},
                index=RECENCY_INDEX,
                newest_first=True,
                limit=want + 1 + slack,
                start_key=start_key,
            )
            rows.extend(entries_from_items(items))
            if start_key is None or sum(map(eligible, rows)) >= want:
                break
        return rows
