"""tests/moto_expressions.py: moto answers as it did with each expression parsed once per process."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.parsing.ast_nodes import Node
from moto.dynamodb.parsing.expressions import UpdateExpressionParser

UPDATE = "SET #a = :a, #b = :b ADD #n :one"


@pytest.fixture
def dynamodb(aws):
    client = boto3.client("dynamodb")
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def _update(client, names: dict[str, str], **condition) -> None:
    client.update_item(
        TableName="t",
        Key={"pk": {"S": "k"}},
        UpdateExpression=UPDATE,
        ExpressionAttributeNames={"#n": "n", **names},
        ExpressionAttributeValues={
            ":a": {"S": "A"},
            ":b": {"S": "B"},
            ":one": {"N": "1"},
            **condition.pop("values", {}),
        },
        **condition,
    )


def _code(call) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"]


def _shape(node) -> object:
    if isinstance(node, Node):
        return (type(node).__name__, [_shape(child) for child in node.children or []])
    return repr(node)


def test_an_update_refused_for_its_names_is_refused_each_time_between_the_same_words_accepted(dynamodb):
    for _ in range(2):
        _update(dynamodb, {"#a": "a", "#b": "b"})
        assert _code(lambda: _update(dynamodb, {"#a": "same", "#b": "same"})) == "ValidationException"
        assert _code(lambda: _update(dynamodb, {"#a": "pk", "#b": "b"})) == "ValidationException"

    item = dynamodb.get_item(TableName="t", Key={"pk": {"S": "k"}})["Item"]
    assert item["n"] == {"N": "2"} and item["a"] == {"S": "A"}


def test_the_same_condition_with_other_values_is_judged_on_its_own_values(dynamodb):
    _update(dynamodb, {"#a": "a", "#b": "b"})  # n = 1
    below = {"ConditionExpression": "#n < :limit", "values": {":limit": {"N": "2"}}}
    for _ in range(2):
        _update(dynamodb, {"#a": "a", "#b": "b"}, **below)  # 1 < 2: n = 2
        assert (
            _code(lambda: _update(dynamodb, {"#a": "a", "#b": "b"}, **below))
            == "ConditionalCheckFailedException"
        )
        below["values"] = {":limit": {"N": "3"}}  # 2 < 3 the second time round

    assert dynamodb.get_item(TableName="t", Key={"pk": {"S": "k"}})["Item"]["n"] == {"N": "3"}


def test_a_name_the_condition_does_not_use_is_refused_each_time(dynamodb):
    unused = {"#a": "a", "#b": "b", "#unused": "x"}
    for _ in range(2):
        assert _code(lambda: _update(dynamodb, unused, ConditionExpression="attribute_not_exists(pk)")) == (
            "ValidationException"
        )


def test_the_kept_tree_of_an_update_is_not_changed_by_the_updates_that_use_it(dynamodb):
    kept = UpdateExpressionParser.make(UPDATE)
    before = _shape(kept)
    _update(dynamodb, {"#a": "a", "#b": "b"})
    _update(dynamodb, {"#a": "a", "#b": "b"})

    assert UpdateExpressionParser.make(UPDATE) is kept
    assert _shape(kept) == before


def test_a_list_appended_to_is_each_updates_own(dynamodb):
    append = "SET #l = list_append(if_not_exists(#l, :empty), :more)"
    for word in ("a", "b"):
        dynamodb.update_item(
            TableName="t",
            Key={"pk": {"S": "k"}},
            UpdateExpression=append,
            ExpressionAttributeNames={"#l": "l"},
            ExpressionAttributeValues={":empty": {"L": []}, ":more": {"L": [{"S": word}]}},
        )

    item = dynamodb.get_item(TableName="t", Key={"pk": {"S": "k"}})["Item"]
    assert item["l"] == {"L": [{"S": "a"}, {"S": "b"}]}
