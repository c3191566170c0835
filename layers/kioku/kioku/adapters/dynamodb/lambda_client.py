"""The table's client where Lambda runs: ``GetItem`` over DynamoDB's JSON protocol (``aws_json``,
signed with the standard library), every other operation by botocore's client, made on first use.

A relayed message that needs the server's configuration reads one item: this way it never imports
botocore (docs/operations.md's Cold starts). Requests and answers are botocore's shapes, binaries
as bytes, and a failure is ``AwsRequestFailed`` with botocore's ``ClientError.response`` in it,
which ``KiokuTable`` translates as it translates botocore's."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Final

from kioku.adapters.aws_json import AwsJsonClient, Service

DYNAMODB: Final = Service("dynamodb", "DynamoDB_20120810", checks_crc32=True)


class DynamoDbHttp(AwsJsonClient):
    service = DYNAMODB


class LambdaDynamoDb:
    def __init__(self, light: DynamoDbHttp, make_botocore: Callable[[], Any]) -> None:
        self._light, self._make_botocore = light, make_botocore
        self._botocore: Any = None

    def get_item(self, **params: Any) -> dict[str, Any]:
        answer = self._light.call("GetItem", params)
        if "Item" in answer:
            answer["Item"] = {name: _decoded(value) for name, value in answer["Item"].items()}
        return answer

    def __getattr__(self, operation: str) -> Any:
        # any other operation (and ``meta``): botocore's client, made once
        if self._botocore is None:
            self._botocore = self._make_botocore()
        return getattr(self._botocore, operation)


def _decoded(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as botocore parses it: a binary's base64 as bytes."""
    kind, inner = next(iter(value.items()))
    if kind == "B":
        return {kind: base64.b64decode(inner)}
    if kind == "BS":
        return {kind: [base64.b64decode(b) for b in inner]}
    if kind == "L":
        return {kind: [_decoded(v) for v in inner]}
    if kind == "M":
        return {kind: {k: _decoded(v) for k, v in inner.items()}}
    return value
