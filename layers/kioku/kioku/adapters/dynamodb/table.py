"""A thin typed wrapper over the DynamoDB low-level client for the single kioku table."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Final, overload

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from kioku import clock as kioku_clock
from kioku.adapters.aws_clients import client
from kioku.adapters.dynamodb.errors import (
    CancellationReason,
    ConditionFailed,
    StoreUnavailable,
    TransactionCancelled,
)
from kioku.adapters.dynamodb.keys import Item, ItemKey, KeyRange

Cursor = dict[str, Any]
"""Where a query's page ended (its LastEvaluatedKey: the item's key, and an index's keys)."""

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=2, read_timeout=5)
_BATCH_GET_LIMIT = 100
_BACKOFF_STEP_SECONDS: Final = 0.002
TTL_ATTRIBUTE: Final = "expires_at"
"""The table's TTL attribute (the template's ``TimeToLiveSpecification``)."""
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def make_client():
    """A DynamoDB client honouring AWS_ENDPOINT_URL_DYNAMODB, with botocore's standard retries."""
    return client("dynamodb", _CLIENT_CONFIG)


def to_wire(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in item.items() if value is not None}


@overload
def from_wire(item: Mapping[str, Any]) -> Item: ...
@overload
def from_wire(item: Mapping[str, Any] | None) -> Item | None: ...
def from_wire(item: Mapping[str, Any] | None) -> Item | None:
    if item is None:
        return None
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def expired(item: Mapping[str, Any], now: datetime) -> bool:
    """Whether ``item`` is past its TTL (``TTL_ATTRIBUTE``, epoch seconds): DynamoDB deletes such
    items only within days, and reads return them until then."""
    expires = item.get(TTL_ATTRIBUTE)
    return isinstance(expires, int | Decimal) and not isinstance(expires, bool) and expires <= now.timestamp()


class KiokuTable:
    """Every DynamoDB call kioku makes goes through here; botocore errors become data-layer errors.

    Every read (``get``, ``batch_get``, ``query``) leaves out the items past their TTL by ``clock``:
    what kioku promises to keep for a time is gone after it, whoever reads."""

    def __init__(
        self, table_name: str, client=None, *, clock: Callable[[], datetime] = kioku_clock.now
    ) -> None:
        self.name = table_name
        self.client = client if client is not None else make_client()
        self.clock = clock

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        response = self._call(
            "get_item", TableName=self.name, Key=to_wire(key.as_item()), ConsistentRead=consistent
        )
        item = from_wire(response.get("Item"))
        return None if item is None or expired(item, self.clock()) else item

    def _live(self, items: Iterable[Mapping[str, Any]]) -> list[Item]:
        now = self.clock()
        return [item for item in map(from_wire, items) if item is not None and not expired(item, now)]

    def batch_get(self, keys: Sequence[ItemKey], *, consistent: bool = True) -> list[Item]:
        """Items for ``keys`` (missing ones left out), retrying unprocessed keys."""
        found: list[Item] = []
        pending = [to_wire(key.as_item()) for key in dict.fromkeys(keys)]
        while pending:
            chunk, pending = pending[:_BATCH_GET_LIMIT], pending[_BATCH_GET_LIMIT:]
            request = {self.name: {"Keys": chunk, "ConsistentRead": consistent}}
            while request:
                response = self._call("batch_get_item", RequestItems=request)
                found.extend(self._live(response.get("Responses", {}).get(self.name, [])))
                request = response.get("UnprocessedKeys") or {}
        return found

    def put(self, item: Item, *, condition: str | None = None, names=None, values=None) -> None:
        params: dict[str, Any] = {"TableName": self.name, "Item": to_wire(item)}
        self._add_condition(params, condition, names, values)
        self._call("put_item", **params)

    def update(
        self,
        key: ItemKey,
        update: str,
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        return_new: bool = False,
    ) -> Item | None:
        params: dict[str, Any] = {
            "TableName": self.name,
            "Key": to_wire(key.as_item()),
            "UpdateExpression": update,
        }
        self._add_condition(params, condition, names, values)
        if return_new:
            params["ReturnValues"] = "ALL_NEW"
        response = self._call("update_item", **params)
        return from_wire(response.get("Attributes"))

    def update_with(
        self,
        key: ItemKey,
        expression: UpdateExpression,
        *,
        condition: str | None = None,
        return_new: bool = False,
    ) -> Item | None:
        """``update`` with ``expression``'s text, names and values (``condition`` takes its aliases)."""
        return self.update(
            key,
            expression.text(),
            condition=condition,
            names=expression.names,
            values=expression.values,
            return_new=return_new,
        )

    def delete(self, key: ItemKey, *, condition: str | None = None, names=None, values=None) -> Item | None:
        params: dict[str, Any] = {
            "TableName": self.name,
            "Key": to_wire(key.as_item()),
            "ReturnValues": "ALL_OLD",
        }
        self._add_condition(params, condition, names, values)
        return from_wire(self._call("delete_item", **params).get("Attributes"))

    def query(
        self,
        key_condition: str,
        *,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        index: str | None = None,
        newest_first: bool = False,
        limit: int | None = None,
        consistent: bool = False,
        start_key: Cursor | None = None,
        filter_expression: str | None = None,
        attributes: Sequence[str] = (),
        expired_too: bool = False,
    ) -> tuple[list[Item], Cursor | None]:
        """One page of a query: the items (only ``attributes`` of them, when given; those past their
        TTL too only with ``expired_too``, for a caller that deletes them) and the key to continue
        from (None at the end)."""
        params: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": key_condition,
            "ScanIndexForward": not newest_first,
        }
        if filter_expression:
            params["FilterExpression"] = filter_expression
        # a projection keeps the TTL, so an expired item is left out of it too
        projected = (
            [*attributes, TTL_ATTRIBUTE] if attributes and TTL_ATTRIBUTE not in attributes else attributes
        )
        aliases = {f"#attr{i}": attribute for i, attribute in enumerate(projected)}
        if aliases:
            params["ProjectionExpression"] = ", ".join(aliases)
        if names or aliases:
            params["ExpressionAttributeNames"] = {**(names or {}), **aliases}
        if values:
            params["ExpressionAttributeValues"] = to_wire(values)
        if index:
            params["IndexName"] = index
        elif consistent:
            params["ConsistentRead"] = True
        if limit:
            params["Limit"] = limit
        if start_key:
            params["ExclusiveStartKey"] = to_wire(start_key)
        response = self._call("query", **params)
        found = response.get("Items", [])
        items = [from_wire(item) or {} for item in found] if expired_too else self._live(found)
        return items, from_wire(response.get("LastEvaluatedKey"))

    def scan(
        self,
        filter_expression: str,
        *,
        names: Mapping[str, str],
        values: Mapping[str, Any],
        limit: int,
        start_key: Cursor | None = None,
    ) -> tuple[list[Item], Cursor | None]:
        """One page of a whole-table scan (``limit`` items read, those ``filter_expression`` keeps),
        and the key to continue from: only for the janitor's backfill, which no key finds."""
        params: dict[str, Any] = {
            "TableName": self.name,
            "FilterExpression": filter_expression,
            "ExpressionAttributeNames": dict(names),
            "ExpressionAttributeValues": to_wire(values),
            "Limit": limit,
        }
        if start_key:
            params["ExclusiveStartKey"] = to_wire(start_key)
        response = self._call("scan", **params)
        return [from_wire(i) for i in response.get("Items", [])], from_wire(response.get("LastEvaluatedKey"))

    def query_range(
        self,
        key_range: KeyRange,
        *,
        consistent: bool = False,
        limit: int | None = None,
        start_key: Cursor | None = None,
        attributes: Sequence[str] = (),
    ) -> tuple[list[Item], Cursor | None]:
        """One page of the items of ``key_range`` (see ``query``)."""
        names, values = {"#pk": "pk"}, {":pk": key_range.pk}
        condition = "#pk = :pk"
        if key_range.prefix:
            names["#sk"], values[":prefix"] = "sk", key_range.prefix
            condition += " AND begins_with(#sk, :prefix)"
        return self.query(
            condition,
            names=names,
            values=values,
            consistent=consistent,
            limit=limit,
            start_key=start_key,
            attributes=attributes,
        )

    def query_range_all(self, key_range: KeyRange, *, consistent: bool = True) -> list[Item]:
        """Every item of ``key_range``, page after page."""
        items: list[Item] = []
        start_key: Cursor | None = None
        while True:
            page, start_key = self.query_range(key_range, consistent=consistent, start_key=start_key)
            items.extend(page)
            if start_key is None:
                return items

    def transact_write(self, operations: Iterable[Mapping[str, Any]]) -> None:
        """Run ``operations`` (already in wire form, see ``op_*``) all-or-nothing."""
        self._call("transact_write_items", TransactItems=list(operations))

    # -- operation builders for transact_write --------------------------------------------------

    def op_put(self, item: Item, *, condition: str | None = None, names=None, values=None) -> dict:
        params: dict[str, Any] = {"TableName": self.name, "Item": to_wire(item)}
        self._add_condition(params, condition, names, values)
        return {"Put": params}

    def op_update(self, key: ItemKey, update: str, *, condition: str | None = None, names=None, values=None):
        params: dict[str, Any] = {
            "TableName": self.name,
            "Key": to_wire(key.as_item()),
            "UpdateExpression": update,
        }
        self._add_condition(params, condition, names, values)
        return {"Update": params}

    def op_update_with(
        self, key: ItemKey, expression: UpdateExpression, *, condition: str | None = None
    ) -> dict:
        return self.op_update(
            key, expression.text(), condition=condition, names=expression.names, values=expression.values
        )

    def op_delete(self, key: ItemKey, *, condition: str | None = None, names=None, values=None) -> dict:
        params: dict[str, Any] = {"TableName": self.name, "Key": to_wire(key.as_item())}
        self._add_condition(params, condition, names, values)
        return {"Delete": params}

    def op_check(self, key: ItemKey, condition: str, *, names=None, values=None) -> dict:
        params: dict[str, Any] = {"TableName": self.name, "Key": to_wire(key.as_item())}
        self._add_condition(params, condition, names, values)
        return {"ConditionCheck": params}

    # -- internals --------------------------------------------------------------------------------

    @staticmethod
    def _add_condition(params, condition, names, values) -> None:
        if condition:
            params["ConditionExpression"] = condition
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if names:
            params["ExpressionAttributeNames"] = dict(names)
        if values:
            params["ExpressionAttributeValues"] = to_wire(values)

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        try:
            return getattr(self.client, operation)(**params)
        except ClientError as exc:
            raise _translate(exc) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(f"{operation} failed: {exc.__class__.__name__}") from exc


class UpdateExpression:
    """An UpdateExpression with every name and value aliased (no reserved-word surprises); a
    condition on the same item takes its aliases from ``name`` and ``value``."""

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

    def append(self, attribute: str, items: Sequence[Any]) -> None:
        """Append ``items`` to the list ``attribute`` (an empty list if it is missing)."""
        name, empty, alias = self.name(attribute), self.value([]), self.value(list(items))
        self._sets.append(f"{name} = list_append(if_not_exists({name}, {empty}), {alias})")

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


def backoff(attempt: int) -> None:
    """Sleep a random while, longer with each lost race (up to ten steps), before trying again."""
    time.sleep(random.uniform(0, _BACKOFF_STEP_SECONDS * min(attempt + 1, 10)))


def _translate(exc: ClientError) -> Exception:
    response: Mapping[str, Any] = exc.response  # its stubs leave out a failed condition's Item
    error = response.get("Error", {})
    code = error.get("Code", "")
    if code == "ConditionalCheckFailedException":
        return ConditionFailed(from_wire(response.get("Item")))
    if code == "TransactionCanceledException":
        reasons = [
            CancellationReason(code=r.get("Code", "None"), old_item=from_wire(r.get("Item")))
            for r in response.get("CancellationReasons", [])
        ]
        return TransactionCancelled(reasons)
    return StoreUnavailable(f"DynamoDB error {code or 'unknown'}")
