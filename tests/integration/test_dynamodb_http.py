"""The table's client where Lambda runs (adapters/dynamodb/lambda_client.py): GetItem signed with the
standard library, read from moto's server over HTTP as botocore's client reads it, its errors
translated as botocore's are, tried again as botocore's standard retries try; every other operation
by botocore's client, made on first use."""

from __future__ import annotations

import json
import threading
import zlib
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import ClassVar

import boto3
import pytest
from botocore.config import Config

from kioku.adapters.aws_json import AwsRequestFailed, Credentials
from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.errors import StoreUnavailable
from kioku.adapters.dynamodb.keys import ItemKey
from kioku.adapters.dynamodb.lambda_client import DynamoDbHttp, LambdaDynamoDb
from kioku.adapters.dynamodb.table import KiokuTable, default_client
from kioku.domain.models import ServerConfig

REGION = "us-east-1"
KEY = ItemKey("SERVER#200000000000000001", "CONFIG")


def no_botocore():
    raise AssertionError("GetItem must not make botocore's client")


def light_table(name: str, endpoint: str, *, make_botocore=no_botocore, waits=None) -> KiokuTable:
    options = {"sleep": waits.append} if waits is not None else {}
    light = DynamoDbHttp(REGION, Credentials("bench", "bench"), endpoint=endpoint, retries=5, **options)
    return KiokuTable(name, LambdaDynamoDb(light, make_botocore))


@pytest.fixture
def moto_table(moto_server):
    """moto's server over HTTP (``tests/conftest.py``), and its table read by botocore's client."""
    yield moto_server.url, moto_server.table()


def test_an_item_is_read_over_http_as_botocore_reads_it(moto_table):
    endpoint, botocore_table = moto_table
    item = {
        "pk": KEY.pk,
        "sk": KEY.sk,
        "text": "héllo",
        "count": 7,
        "ratio": Decimal("0.125"),
        "flags": {"a", "b"},
        "numbers": {1, 2},
        "vector": b"\x00\x01\xff",
        "vectors": {b"\x01", b"\x02"},
        "nested": {"list": [1, "two", None, True, {"deep": b"\x7f"}]},
    }
    botocore_table.put(item)
    light = light_table(botocore_table.name, endpoint)
    assert light.get(KEY) == botocore_table.get(KEY) == item
    assert light.get(ItemKey(KEY.pk, "NOT-THERE")) is None


def test_the_relays_configuration_read_finds_what_was_saved(moto_table):
    endpoint, botocore_table = moto_table
    saved = ConfigStore(botocore_table).save_server_config(
        ServerConfig(guild_id="200000000000000002", trigger_words=("kioku", "bot"))
    )
    light = ConfigStore(light_table(botocore_table.name, endpoint))
    assert light.get_server_config("200000000000000002") == saved
    assert light.get_server_config("200000000000000003") == ConfigStore(botocore_table).get_server_config(
        "200000000000000003"
    )


def test_a_missing_table_is_unavailable_as_with_botocore(moto_table):
    endpoint, botocore_table = moto_table
    with pytest.raises(StoreUnavailable) as theirs:
        KiokuTable("gone", botocore_table.client).get(KEY)
    with pytest.raises(StoreUnavailable) as mine:
        light_table("gone", endpoint).get(KEY)
    assert str(mine.value) == str(theirs.value) == "DynamoDB error ResourceNotFoundException"


def test_other_operations_make_botocores_client_once(moto_table):
    endpoint, botocore_table = moto_table
    made = []

    def make():
        made.append(1)
        return botocore_table.client

    table = light_table(botocore_table.name, endpoint, make_botocore=make)
    table.put({"pk": KEY.pk, "sk": KEY.sk, "n": 1})
    table.update(KEY, "SET n = :n", values={":n": 2})
    assert table.get(KEY) == {"pk": KEY.pk, "sk": KEY.sk, "n": 2} and made == [1]


class _Canned(BaseHTTPRequestHandler):
    """Answers each POST with the next of ``answers``: (status, body, extra headers)."""

    answers: ClassVar[list[tuple[int, dict, dict[str, str]]]] = []
    seen: ClassVar[list[str]] = []
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append(self.headers["X-Amz-Target"])
        status, answer, headers = type(self).answers.pop(0)
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        headers = {"x-amz-crc32": str(zlib.crc32(body)), **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


BOTOCORE_WAITS: list[float] = []


@pytest.fixture(autouse=True)
def backoff_at_its_longest(monkeypatch):
    """Both clients draw their backoff's random part as 1.0, so their waits are the longest each
    allows and can be compared; botocore's are recorded instead of slept (up to 1 s doubled)."""
    import botocore.endpoint
    from botocore.retries.standard import ExponentialBackoff

    import kioku.adapters.aws_json

    BOTOCORE_WAITS.clear()
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=BOTOCORE_WAITS.append))
    monkeypatch.setattr(ExponentialBackoff.__init__, "__defaults__", (20, lambda: 1.0))
    monkeypatch.setattr(kioku.adapters.aws_json, "random", SimpleNamespace(random=lambda: 1.0))


@pytest.fixture
def canned():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Canned.seen = []
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


FOUND = (200, {"Item": {"pk": {"S": KEY.pk}, "sk": {"S": KEY.sk}, "v": {"B": "AAE="}}}, {})
THROTTLED = (400, {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}, {})
FAILED = (500, {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError"}, {})
OLD = {"pk": {"S": KEY.pk}, "sk": {"S": KEY.sk}, "n": {"N": "3"}}


def both_ways(endpoint: str, answers: list) -> list[tuple[object, int, list[float]]]:
    """What ``get`` gives (or raises), how many requests it made and how long it waited between
    them, by botocore's client and by the standard library's, each given ``answers`` in turn."""
    outcomes = []
    waits: list[float] = []
    botocore = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="a",
        aws_secret_access_key="b",
        config=Config(retries={"mode": "standard", "max_attempts": 5}),
    )
    for table, slept in (
        (KiokuTable("t", botocore), BOTOCORE_WAITS),
        (light_table("t", endpoint, waits=waits), waits),
    ):
        _Canned.answers, _Canned.seen = list(answers), []
        try:
            found: object = table.get(KEY)
        except Exception as exc:
            found = (type(exc), str(exc), getattr(exc, "old_item", None), getattr(exc, "reasons", None))
        outcomes.append((found, len(_Canned.seen), list(slept)))
    return outcomes


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param([FOUND], id="found"),
        pytest.param([(200, {}, {})], id="not found"),
        pytest.param([THROTTLED, THROTTLED, FOUND], id="throttled twice"),
        pytest.param([FAILED] * 6, id="failing: six attempts"),
        pytest.param([(503, {}, {}), FOUND], id="a 503 without a body"),
        pytest.param([(200, FOUND[1], {"x-amz-crc32": "1"}), FOUND], id="a garbled answer"),
        pytest.param(
            [(400, {"__type": "com.amazonaws.dynamodb.v20120810#ValidationException", "message": "no"}, {})],
            id="refused",
        ),
        pytest.param(
            [(400, {"__type": "x#ConditionalCheckFailedException", "message": "m", "Item": OLD}, {})],
            id="condition failed",
        ),
        pytest.param(
            [
                (
                    400,
                    {
                        "__type": "x#TransactionCanceledException",
                        "CancellationReasons": [
                            {"Code": "ConditionalCheckFailed", "Item": OLD},
                            {"Code": "None"},
                        ],
                    },
                    {},
                )
            ],
            id="transaction cancelled",
        ),
    ],
)
def test_answers_errors_and_retries_are_botocores(canned, answers):
    botocore_way, standard_library_way = both_ways(canned, answers)
    assert standard_library_way == botocore_way


def test_a_throttled_read_waits_as_botocore_does(canned):
    _Canned.answers = [THROTTLED, THROTTLED, (500, {}, {}), FOUND]
    waits: list[float] = []
    assert light_table("t", canned, waits=waits).get(KEY) is not None
    # throttled or failing alike: at most 1 s, then 2, then 4 (the pinned botocore's standard mode)
    assert waits == [1.0, 2.0, 4.0]
    assert _Canned.seen == ["DynamoDB_20120810.GetItem"] * 4


def test_a_connection_refused_is_tried_again_then_unavailable():
    import socket

    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    waits: list[float] = []
    with pytest.raises(StoreUnavailable) as unavailable:
        light_table("t", f"http://127.0.0.1:{port}", waits=waits).get(KEY)
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0] and isinstance(unavailable.value.__cause__, AwsRequestFailed)


def test_only_a_function_lambda_runs_with_its_credentials_reads_without_botocore(monkeypatch):
    for name, value in {
        "AWS_LAMBDA_FUNCTION_NAME": "kioku-RelayFunction",
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "b",
    }.items():
        monkeypatch.setenv(name, value)
    assert isinstance(default_client(), LambdaDynamoDb)
    monkeypatch.setenv("AWS_REGION", "us-iso-east-1")  # an isolated partition: botocore's endpoints
    assert not isinstance(default_client(), LambdaDynamoDb)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    assert not isinstance(default_client(), LambdaDynamoDb)
