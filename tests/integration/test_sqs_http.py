"""The turn queue's own SQS client (adapters/sqs_http.py), used where Lambda runs: signed as botocore
signs, understood by moto's server over HTTP, tried again as botocore's standard retries do."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import ClassVar

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotocoreCredentials
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff

from kioku.adapters.aws_json import authorization, partition_domain
from kioku.adapters.sqs_http import Credentials, SqsHttp, SqsRequestFailed, regional_endpoint
from kioku.adapters.turn_queue import BUDGET_SECONDS, DeadLetterQueue, TurnQueue, sqs_client
from kioku.discord.models import User
from kioku.domain.turn_jobs import QueueUnavailable, TurnJob, TurnSource

REGION = "us-east-1"


@pytest.fixture
def sample_job() -> TurnJob:
    return TurnJob(
        source=TurnSource.SLASH_COMMAND,
        turn_id="500000000000000001",
        channel_id="300000000000000001",
        guild_id="200000000000000001",
        author=User("400000000000000001", "alice"),
        content="hello",
        interaction_token="t",
        application_id="100000000000000001",
    )


@pytest.mark.parametrize("token", [None, "session-token"])
def test_a_request_is_signed_as_botocore_signs_it(token):
    body = b'{"QueueUrl":"https://sqs.eu-central-1.amazonaws.com/1/q.fifo","MessageBody":"hi  there"}'
    signed = AWSRequest(
        method="POST",
        url="https://sqs.eu-central-1.amazonaws.com/",
        data=body,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage"},
    )
    SigV4Auth(BotocoreCredentials("AKID", "SECRET", token), "sqs", "eu-central-1").add_auth(signed)
    headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "Host": "sqs.eu-central-1.amazonaws.com",
        "X-Amz-Date": signed.headers["X-Amz-Date"],
        "X-Amz-Target": "AmazonSQS.SendMessage",
        **({"X-Amz-Security-Token": token} if token else {}),
    }
    mine = authorization(headers, body, "eu-central-1", Credentials("AKID", "SECRET", token), service="sqs")
    assert mine == signed.headers["Authorization"]


@pytest.fixture
def moto_queue(moto_server):
    """moto's server over HTTP (``tests/conftest.py``), its SQS client and the turn queue."""
    yield (
        moto_server.url,
        boto3.client("sqs", endpoint_url=moto_server.url),
        moto_server.resources.turn_queue_url,
    )


def test_the_queues_calls_reach_moto_over_http(moto_queue, sample_job):
    endpoint, sqs, url = moto_queue
    client = SqsHttp(REGION, Credentials("bench", "bench"), endpoint=endpoint)

    # a turn queued, its visibility changed, and a dead-lettered copy with its reason
    TurnQueue(url, client).enqueue(sample_job)
    received = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"][0]
    assert json.loads(received["Body"]) == json.loads(sample_job.to_json())
    assert received["Attributes"]["MessageGroupId"] == sample_job.channel_id
    TurnQueue(url, client).retry_soon(received["ReceiptHandle"], 0)
    DeadLetterQueue(url, client).send("body", group_id="g", deduplication_id="d", reason="why", attempts=3)
    bodies = []
    for _ in range(3):
        for message in sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"]).get("Messages", []):
            bodies.append((message["Body"], message.get("MessageAttributes", {}).get("DeadLetterReason")))
    assert ("body", {"StringValue": "why", "DataType": "String"}) in bodies


def test_a_queue_that_is_not_there_is_unavailable_at_once_named_as_botocore_names_it(moto_queue, sample_job):
    endpoint, sqs, url = moto_queue
    gone = url.rsplit("/", 1)[0] + "/gone.fifo"
    waits: list[float] = []
    client = SqsHttp(REGION, Credentials("bench", "bench"), endpoint=endpoint, sleep=waits.append)
    with pytest.raises(QueueUnavailable) as unavailable:
        TurnQueue(gone, client).enqueue(sample_job)
    with pytest.raises(ClientError) as botocore_way:
        sqs.send_message(QueueUrl=gone, MessageBody="b", MessageGroupId="g", MessageDeduplicationId="d")
    failed = unavailable.value.__cause__
    assert isinstance(failed, SqsRequestFailed) and waits == []
    # the older protocol's code, from x-amzn-query-error, and the JSON one kept beside it
    assert failed.response["Error"] == botocore_way.value.response["Error"]
    assert failed.code == "AWS.SimpleQueueService.NonExistentQueue"
    assert failed.response["Error"]["QueryErrorCode"] == "QueueDoesNotExist"


class _Flaky(BaseHTTPRequestHandler):
    """Answers each POST with the next of ``answers`` (status, SQS error type or None)."""

    answers: ClassVar[list[tuple[int, str | None]]] = []
    seen: ClassVar[list[str]] = []
    connections: ClassVar[list[int]] = []
    protocol_version = "HTTP/1.1"  # keeps a connection open between requests

    def setup(self):
        super().setup()
        type(self).connections.append(1)

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append(self.headers["X-Amz-Target"])
        status, error = type(self).answers.pop(0)
        body = json.dumps({"__type": f"com.amazonaws.sqs#{error}"} if error else {"MessageId": "m"}).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Flaky.seen, _Flaky.connections = [], []
    yield server, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def longest_waits(monkeypatch):
    """The backoff's random part drawn as 1.0: each wait the longest it may be."""
    import kioku.adapters.aws_json

    monkeypatch.setattr(kioku.adapters.aws_json, "random", SimpleNamespace(random=lambda: 1.0))


@pytest.mark.parametrize(
    ("answers", "sent", "waits"),
    [
        # throttled twice, then taken: three attempts, waiting at most 1 s, then 2 s
        ([(400, "ThrottlingException"), (400, "RequestThrottled"), (200, None)], True, [1.0, 2.0]),
        # a server error each time: four attempts (botocore's max_attempts 3 are retries), waiting
        # at most 1, 2 and 4 s as the pinned botocore's standard mode does, then unavailable
        ([(500, "InternalError"), (503, None), (502, None), (504, None)], False, [1.0, 2.0, 4.0]),
        # refused for good (a bad parameter): one attempt
        ([(400, "InvalidParameterValue")], False, []),
    ],
)
def test_throttling_and_server_errors_are_tried_again_as_botocore_does(
    flaky, sample_job, longest_waits, answers, sent, waits
):
    _, endpoint = flaky
    _Flaky.answers = list(answers)
    waited: list[float] = []
    queue = TurnQueue(
        "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
        SqsHttp(REGION, Credentials("a", "b"), endpoint=endpoint, sleep=waited.append),
    )
    if sent:
        queue.enqueue(sample_job)
    else:
        with pytest.raises(QueueUnavailable):
            queue.enqueue(sample_job)
    assert _Flaky.seen == ["AmazonSQS.SendMessage"] * len(answers)
    assert waited == waits
    expected = [
        ExponentialBackoff(random=lambda: 1.0).delay_amount(SimpleNamespace(attempt_number=n))
        for n in (1, 2, 3)
    ]
    assert waits == expected[: len(waits)]


def test_a_queue_call_gives_up_when_its_next_wait_would_end_past_its_budget(flaky, sample_job, longest_waits):
    # /chat queues its turn before it answers Discord, which waits three seconds for the answer
    _, endpoint = flaky
    _Flaky.answers = [(500, "InternalError")] * 4
    now = [0.0]
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        now[0] += seconds

    client = SqsHttp(
        REGION,
        Credentials("a", "b"),
        endpoint=endpoint,
        budget=BUDGET_SECONDS,
        sleep=sleep,
        clock=lambda: now[0],
    )
    with pytest.raises(QueueUnavailable):
        TurnQueue("https://sqs.us-east-1.amazonaws.com/1/q.fifo", client).enqueue(sample_job)
    # 1 s waited; the next 2 s would end at 3 s, past the 2 s budget: two attempts, not four
    assert waited == [1.0] and len(_Flaky.seen) == 2


def test_a_connection_refused_is_tried_again_then_unavailable(sample_job):
    import socket

    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    waits: list[float] = []
    client = SqsHttp(REGION, Credentials("a", "b"), endpoint=f"http://127.0.0.1:{port}", sleep=waits.append)
    with pytest.raises(QueueUnavailable):
        TurnQueue("https://sqs.us-east-1.amazonaws.com/1/q.fifo", client).enqueue(sample_job)
    assert len(waits) == 3


def test_only_a_function_lambda_runs_with_its_credentials_uses_it(monkeypatch):
    lambda_env = {
        "AWS_LAMBDA_FUNCTION_NAME": "kioku-RelayFunction",
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "b",
        "AWS_SESSION_TOKEN": "t",
    }
    for name, value in lambda_env.items():
        monkeypatch.setenv(name, value)
    assert isinstance(sqs_client(), SqsHttp)
    monkeypatch.setenv("AWS_USE_FIPS_ENDPOINT", "true")  # an endpoint variant: botocore's rules
    assert not isinstance(sqs_client(), SqsHttp)
    monkeypatch.delenv("AWS_USE_FIPS_ENDPOINT")
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    assert not isinstance(sqs_client(), SqsHttp)  # the tests' and the playground's: botocore's


@pytest.mark.parametrize(
    ("queue_url", "region", "endpoint"),
    [
        (
            "https://sqs.eu-central-1.amazonaws.com/1/q.fifo",
            "eu-central-1",
            "https://sqs.eu-central-1.amazonaws.com",
        ),
        (
            "https://sqs.cn-north-1.amazonaws.com.cn/1/q.fifo",
            "cn-north-1",
            "https://sqs.cn-north-1.amazonaws.com.cn",
        ),
        # a legacy queue URL, or another region's: SQS's own endpoint in the function's region
        (
            "https://eu-central-1.queue.amazonaws.com/1/q.fifo",
            "eu-central-1",
            "https://sqs.eu-central-1.amazonaws.com",
        ),
        (
            "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
            "cn-north-1",
            "https://sqs.cn-north-1.amazonaws.com.cn",
        ),
    ],
)
def test_the_endpoint_is_sqss_in_the_functions_region(queue_url, region, endpoint):
    assert regional_endpoint(queue_url, region) == endpoint


def test_only_partitions_whose_endpoints_are_service_region_domain_are_ours():
    """Every region botocore knows: its partition's domain where endpoints are
    ``<service>.<region>.<domain>`` (aws, aws-cn, aws-us-gov); None (botocore's rules) elsewhere:
    the isolated partitions and the European Sovereign Cloud's ``amazonaws.eu``."""
    import botocore.loaders

    partitions = botocore.loaders.Loader().load_data("partitions")["partitions"]
    ours = {"aws", "aws-cn", "aws-us-gov"}
    for partition in partitions:
        expected = partition["outputs"]["dnsSuffix"] if partition["id"] in ours else None
        # the real regions (not pseudo-regions such as aws-global, which Lambda never runs in)
        for region in filter(re.compile(partition["regionRegex"]).match, partition["regions"]):
            assert partition_domain(region) == expected, region
    assert partition_domain("eusc-de-east-1") is None and partition_domain("us-east-1") == "amazonaws.com"


def test_a_warm_container_sends_its_next_message_on_the_same_connection(flaky, sample_job):
    # as botocore's pool does: a warm relay's next message pays no new handshake
    _, endpoint = flaky
    _Flaky.answers = [(200, None), (200, None)]
    queue = TurnQueue(
        "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
        SqsHttp(REGION, Credentials("a", "b"), endpoint=endpoint),
    )
    queue.enqueue(sample_job)
    queue.enqueue(sample_job)
    assert _Flaky.seen == ["AmazonSQS.SendMessage"] * 2 and len(_Flaky.connections) == 1


def test_the_credentials_never_show_their_secret_or_token():
    credentials = Credentials("AKID", "SECRET-KEY", "SESSION-TOKEN")
    assert "SECRET-KEY" not in repr(credentials) and "SESSION-TOKEN" not in repr(credentials)
    assert "SECRET-KEY" not in str(credentials) and "AKID" in repr(credentials)


class _ClosesAfterAnswering(BaseHTTPRequestHandler):
    """Answers, then closes the connection without saying so (as a service closes one left idle)."""

    protocol_version = "HTTP/1.1"
    connections: ClassVar[list[int]] = []

    def setup(self):
        super().setup()
        type(self).connections.append(1)

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"MessageId": "m"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_a_kept_connection_the_service_closed_is_replaced_at_once_without_a_wait(sample_job):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ClosesAfterAnswering)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _ClosesAfterAnswering.connections = []
    waits: list[float] = []
    client = SqsHttp(
        REGION, Credentials("a", "b"), endpoint=f"http://127.0.0.1:{server.server_port}", sleep=waits.append
    )
    queue = TurnQueue("https://sqs.us-east-1.amazonaws.com/1/q.fifo", client)
    try:
        queue.enqueue(sample_job)
        queue.enqueue(sample_job)  # a warm container's next message, on the connection now closed
    finally:
        server.shutdown()
    assert waits == [] and len(_ClosesAfterAnswering.connections) == 2


class _Hangs(BaseHTTPRequestHandler):
    """Takes the request and never answers (until the test ends)."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).release.wait(10)

    def log_message(self, *args):
        pass


def test_a_budget_bounds_each_attempts_wait_for_an_answer_too(sample_job):
    # /chat's deadline is Discord's: a read timeout longer than what is left of the budget is cut
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hangs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hangs.release.clear()
    client = SqsHttp(
        REGION,
        Credentials("a", "b"),
        endpoint=f"http://127.0.0.1:{server.server_port}",
        timeouts=(1.0, 5.0),
        budget=0.3,
        sleep=lambda seconds: None,
    )
    started = time.monotonic()
    try:
        with pytest.raises(QueueUnavailable):
            TurnQueue("https://sqs.us-east-1.amazonaws.com/1/q.fifo", client).enqueue(sample_job)
    finally:
        _Hangs.release.set()
        server.shutdown()
    # the read would wait 5 s; the budget's 0.3 s (and a loaded machine's slack) is what it waited
    assert time.monotonic() - started < 2.5
