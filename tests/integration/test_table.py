"""The data-layer wrapper against moto: error translation, conditions, transactions, batch reads."""

from __future__ import annotations

import pytest

from kioku.adapters.dynamodb.errors import ConditionFailed, TransactionCancelled
from kioku.adapters.dynamodb.keys import ItemKey, KeyRange


def test_conditional_put_failure_returns_the_item_it_collided_with(table):
    # Given an item
    table.put({"pk": "A", "sk": "1", "value": 1})
    # When a create-only put collides with it
    with pytest.raises(ConditionFailed) as raised:
        table.put({"pk": "A", "sk": "1", "value": 2}, condition="attribute_not_exists(pk)")
    # Then the error carries the stored item, and nothing changed
    assert raised.value.old_item == {"pk": "A", "sk": "1", "value": 1}
    assert table.get(ItemKey("A", "1"))["value"] == 1


def test_cancelled_transaction_names_the_failing_item_and_writes_nothing(table):
    table.put({"pk": "A", "sk": "counter", "count": 3})
    with pytest.raises(TransactionCancelled) as raised:
        table.transact_write(
            [
                table.op_put({"pk": "A", "sk": "new"}, condition="attribute_not_exists(pk)"),
                table.op_update(
                    ItemKey("A", "counter"),
                    "SET #count = #count + :one",
                    condition="#count < :limit",
                    names={"#count": "count"},
                    values={":one": 1, ":limit": 3},
                ),
            ]
        )
    reasons = raised.value.reasons
    assert [r.condition_failed for r in reasons] == [False, True]
    assert reasons[1].old_item["count"] == 3
    assert table.get(ItemKey("A", "new")) is None


def test_batch_get_returns_found_items_and_skips_missing_and_duplicates(table):
    for index in range(150):
        table.put({"pk": "B", "sk": f"{index:03d}"})
    keys = [ItemKey("B", f"{index:03d}") for index in range(150)] + [ItemKey("B", "missing")]
    found = table.batch_get(keys + keys[:5])
    assert len(found) == 150


def test_query_pages_newest_first(table):
    for index in range(5):
        table.put({"pk": "C", "sk": f"{index}"})
    items, next_key = table.query("pk = :pk", values={":pk": "C"}, newest_first=True, limit=2)
    assert [item["sk"] for item in items] == ["4", "3"]
    assert next_key is not None


def test_a_key_range_reads_the_sort_keys_with_its_prefix_or_the_whole_partition(table):
    for sk in ("OUTBOX#1", "OUTBOX#2", "OUTBOXES", "PROFILE"):
        table.put({"pk": "D", "sk": sk})
    table.put({"pk": "E", "sk": "OUTBOX#3"})
    items, _ = table.query_range(KeyRange("D", "OUTBOX#"), consistent=True)
    assert [item["sk"] for item in items] == ["OUTBOX#1", "OUTBOX#2"]
    everything, _ = table.query_range(KeyRange("D"), consistent=True)
    assert [item["sk"] for item in everything] == ["OUTBOX#1", "OUTBOX#2", "OUTBOXES", "PROFILE"]
