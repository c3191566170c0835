"""A person's own short-term memory data: the rows holding their raw lines (found through the notes
a capture leaves in their partition, ``keys.lines_note_key``) and their DM rows; what
``/personal memories export`` reads and ``forget-all`` removes."""

from __future__ import annotations

from typing import Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import ItemKey, dm_row_range, lines_note_range, noted_row, stm_row_key
from kioku.adapters.dynamodb.stm_items import crude_lines_to_items, entries_from_items, entry_from_item
from kioku.adapters.dynamodb.stm_writes import CaptureConflict
from kioku.adapters.dynamodb.table import KiokuTable, UpdateExpression, backoff
from kioku.domain.stm.entries import StmEntry

MAX_FORGET_ATTEMPTS: Final = 16


class StmPersonRows:
    """The short-term memory rows that hold a person's own data."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

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
        items = self._table.query_range_all(dm_row_range(user_id))
        return entries_from_items(items)

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
            expression = UpdateExpression()
            expression.set("crude", crude_lines_to_items(kept))
            expression.set("version", entry.version + 1)
            try:
                self._table.update_with(
                    key,
                    expression,
                    condition=f"{expression.name('version')} = {expression.value(entry.version)}",
                )
                return len(entry.crude) - len(kept)
            except ConditionFailed:
                backoff(attempt)
        raise CaptureConflict(f"a row kept changing while forgetting lines ({MAX_FORGET_ATTEMPTS} attempts)")

    def _notes_of(self, user_id: str) -> list[ItemKey]:
        return [ItemKey.of(note) for note in self._table.query_range_all(lines_note_range(user_id))]
