"""Kill TurnFunction at a chosen point of a turn, then let a fresh one take the redelivery.

The real handler (``functions/turn/app.py``) runs in a child process (``turn_child``), against the
local stack: moto over HTTP behind small proxies (one for DynamoDB, one for SQS), the Discord, LLM
and embeddings stand-ins. A ``Fault`` names a point by the hop and request it fires on; when that
request arrives the harness SIGKILLs the child (``kill``) or lets the request apply and loses its
response (``lose``: the connection closes without an answer). The DynamoDB proxy honours a
transaction's ``ClientRequestToken`` as DynamoDB does (a retry of a transaction that was applied
succeeds without applying it again), as the Discord stand-in honours ``nonce`` + ``enforce_nonce``;
the SQS proxy keeps SQS's five-minute deduplication window on the harness's own clock, which moves
on by a killed worker's visibility timeout when its message comes back (see ``SqsProxy``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from kioku.playground.stack import LocalStack
from kioku.playground.standins import (
    DropConnection,
    EmbeddingsStandIn,
    OpenAIStandIn,
    RecordedRequest,
    Responder,
)

ROOT: Final = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_SECONDS: Final = 60


@dataclass(frozen=True)
class Fault:
    """On the ``nth`` request of ``hop`` ("discord", "llm", "embeddings", "dynamodb", "sqs") that ``matches``: ``kill``
    the worker before it is applied ("before") or after ("after"), or ``lose`` its response; or
    ``refuse`` it unapplied, ``times`` requests in a row from the ``nth``, answering ``refusal``
    (status, JSON body: a DynamoDB error, say)."""

    name: str
    hop: str
    matches: Callable[[RecordedRequest], bool]
    action: str = "kill"
    when: str = "after"
    nth: int = 1
    times: int = 1
    refusal: tuple[int, dict[str, Any]] | None = None
    meanwhile: Callable[[], None] | None = None
    """``meanwhile``: run this (another worker's whole turn, say) before the request goes on."""


class Refused(Exception):
    """Raised by ``Chaos.intercept``: answer the request with ``status`` and ``body`` instead."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(f"refused with {status}")
        self.status, self.body = status, body


def dynamodb_refusal(code: str, reasons: list[str] | None = None) -> tuple[int, dict[str, Any]]:
    """A DynamoDB error response: ``code`` (``ThrottlingException``…), or a cancelled transaction
    whose items failed for ``reasons`` (``["TransactionConflict", "None"]``)."""
    body: dict[str, Any] = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code}
    if reasons is not None:
        body["message"] = (
            f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(reasons)}]"
        )
        body["CancellationReasons"] = [{"Code": reason} for reason in reasons]
    return 400, body


@dataclass
class Chaos:
    """The fault armed for the current child, and whether it fired."""

    fault: Fault | None = None
    child_pid: int | None = None
    seen: int = 0
    fired: bool = False
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: bytes | None = None
    """The request held while ``meanwhile`` runs: its client's retries of it wait too."""
    meanwhile_over: threading.Event = field(default_factory=threading.Event)

    def arm(self, fault: Fault | None) -> None:
        self.fault, self.seen, self.fired, self.refused = fault, 0, False, 0

    def intercept(self, hop: str, when: str, request: RecordedRequest) -> None:
        if when == "before" and self.held is not None and request.raw_body == self.held:
            # a request held longer than the worker's read timeout is sent again (botocore retries the
            # same body): on a loaded machine the retry would overtake what runs meanwhile
            self.meanwhile_over.wait(CHILD_TIMEOUT_SECONDS)
        with self.lock:
            fault = self.fault
            if fault is None or fault.hop != hop or not fault.matches(request):
                return
            if fault.action == "refuse":
                self._refuse(fault, when)
                return
            if self.fired:
                return
            if when == "before":
                self.seen += 1
            if self.seen != fault.nth:
                return
            if fault.action == "meanwhile":
                if when != "before":
                    return
                self.fired = True
            else:
                if fault.when != when if fault.action == "kill" else when != "after":
                    return
                self.fired = True
                if fault.action == "kill" and self.child_pid is not None:
                    _kill(self.child_pid)
        if fault.meanwhile is not None:
            self.held = request.raw_body
            self.meanwhile_over.clear()
            try:
                fault.meanwhile()  # outside the lock: what runs meanwhile passes through here too
            finally:
                self.held = None
                self.meanwhile_over.set()
            return
        raise DropConnection

    def _refuse(self, fault: Fault, when: str) -> None:
        if when != "before" or self.refused >= fault.times:
            return
        self.seen += 1
        if self.seen < fault.nth:
            return
        self.refused += 1
        self.fired = True
        assert fault.refusal is not None
        raise Refused(*fault.refusal)


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and return once it is dead, so that nothing more of it can happen."""
    handle = os.pidfd_open(pid)
    try:
        signal.pidfd_send_signal(handle, signal.SIGKILL)
        select.select([handle], [], [], CHILD_TIMEOUT_SECONDS)  # readable once the process ended
    finally:
        os.close(handle)


class DynamoDbProxy:
    """Forwards the worker's DynamoDB requests (or another JSON-protocol service's, named by ``hop``)
    to moto, with ``Chaos`` deciding their fate."""

    def __init__(self, target: str, chaos: Chaos, hop: str = "dynamodb") -> None:
        self.target, self.chaos, self.hop = target, chaos, hop
        self.tokens: dict[str, tuple[int, bytes]] = {}
        self.operations: list[str] = []
        self._client = httpx.Client(timeout=10)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> DynamoDbProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def _forward(self, request: RecordedRequest, headers: dict[str, str]) -> tuple[int, bytes]:
        token = (
            (request.body or {}).get("ClientRequestToken") if "TransactWriteItems" in request.path else None
        )
        if token and token in self.tokens:
            return self.tokens[token]
        response = self._client.post(self.target + "/", content=request.raw_body, headers=headers)
        if token and response.status_code == 200:
            self.tokens[token] = (200, response.content)
        return response.status_code, response.content

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                target = self.headers.get("X-Amz-Target", "")
                operation = target.rsplit(".", 1)[-1]
                request = RecordedRequest(
                    method="POST",
                    path=operation,
                    query={},
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=json.loads(raw or b"{}"),
                    raw_body=raw,
                )
                headers = {
                    name: value
                    for name, value in self.headers.items()
                    if name.lower() not in {"host", "content-length", "connection"}
                }
                try:
                    proxy.chaos.intercept(proxy.hop, "before", request)
                    proxy.operations.append(operation)
                    status, body = proxy._forward(request, headers)
                    proxy.chaos.intercept(proxy.hop, "after", request)
                except DropConnection:
                    self.close_connection = True
                    return
                except Refused as refused:
                    status, body = refused.status, json.dumps(refused.body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        return Handler


class SqsProxy(DynamoDbProxy):
    """Forwards the worker's SQS requests to moto, keeping SQS's deduplication window on a clock of
    its own: a second send with the same deduplication id lands again once five minutes of that
    clock have passed since the first, as SQS would take it (moto, which compares real time with
    what its queue still holds, is sent a fresh id then). The harness moves the clock on by the
    visibility timeout a killed worker's message comes back after, instead of waiting for it:
    what the worker last set for it (``visibility``, by receipt handle), else the queue's own."""

    DEDUPLICATION_WINDOW_SECONDS: Final = 300

    def __init__(self, target: str, chaos: Chaos) -> None:
        super().__init__(target, chaos, hop="sqs")
        self.clock = 0.0
        self.visibility: dict[str, int] = {}
        self._first_sent: dict[tuple[str, str], float] = {}
        self._late_sends = 0

    def _forward(self, request: RecordedRequest, headers: dict[str, str]) -> tuple[int, bytes]:
        body = request.body or {}
        if request.path == "ChangeMessageVisibility":
            self.visibility[body["ReceiptHandle"]] = int(body["VisibilityTimeout"])
        if request.path == "SendMessage" and body.get("MessageDeduplicationId"):
            first = self._first_sent.setdefault(
                (body["QueueUrl"], body["MessageDeduplicationId"]), self.clock
            )
            if self.clock - first >= self.DEDUPLICATION_WINDOW_SECONDS:
                self._late_sends += 1
                body = {
                    **body,
                    "MessageDeduplicationId": f"{body['MessageDeduplicationId']}~{self._late_sends}",
                }
                raw = json.dumps(body).encode()
                request = RecordedRequest(
                    request.method, request.path, request.query, request.headers, body, raw
                )
        return super()._forward(request, headers)


@dataclass
class CrashHarness:
    """Feeds the stack's queue to TurnFunction children, as Lambda's poller would."""

    stack: LocalStack
    chaos: Chaos
    containers: Containers
    sqs: SqsProxy | None = None
    outcomes: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    """The SQS id of every message delivered, in order (once each)."""
    bodies: dict[str, str] = field(default_factory=dict)
    """The body of every message delivered, by SQS id."""
    last_event: dict[str, Any] | None = None
    """The SQS event the last child was handed."""

    def deliver(
        self,
        fault: Fault | None = None,
        *,
        max_deliveries: int = 5,
        env: dict[str, str] | None = None,
        containers: Containers | None = None,
        clock_ahead: timedelta = timedelta(0),
    ) -> list[str]:
        """Deliver until the queue is empty; ``fault`` is armed for the first child only, ``env`` is
        added to every child's environment, ``containers`` (another release's, say) run them instead
        of the harness's own, the first child's clock runs ``clock_ahead`` of the others' (behind
        when negative). Each delivery's outcome: "killed", "failed" (a batch item failure) or
        "done". A message comes back at once, the SQS proxy's clock moved on by the visibility
        timeout it would have waited out."""
        queue = self.stack.resources.turn_queue_url
        outcomes: list[str] = []
        self.chaos.arm(fault)
        for _ in range(max_deliveries):
            received = self.stack.sqs.receive_message(
                QueueUrl=queue, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=0
            ).get("Messages", [])
            if not received:
                break
            self.message_ids += [m["MessageId"] for m in received if m["MessageId"] not in self.message_ids]
            self.bodies.update((m["MessageId"], m["Body"]) for m in received)
            self.last_event = self.stack.sqs_event(received)
            outcome, failed = self._run_child(
                self.last_event, env, containers=containers, clock_ahead=clock_ahead
            )
            self.chaos.fault, clock_ahead = None, timedelta(0)  # the redeliveries go to healthy workers
            outcomes.append(outcome)
            waited = 0
            for message in received:
                if outcome == "killed" or message["MessageId"] in failed:
                    waited = max(waited, self._visibility_of(message["ReceiptHandle"]))
                    self.stack.sqs.change_message_visibility(
                        QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
                else:
                    self.stack.sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
            if self.sqs is not None:
                self.sqs.clock += waited
        return outcomes

    def _visibility_of(self, receipt_handle: str) -> int:
        """How long SQS would keep the message hidden: what the worker last asked, else the queue's."""
        if self.sqs is not None and receipt_handle in self.sqs.visibility:
            return self.sqs.visibility[receipt_handle]
        attributes = self.stack.sqs.get_queue_attributes(
            QueueUrl=self.stack.resources.turn_queue_url, AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return int(attributes["VisibilityTimeout"])

    def run_twin(self, twin: Containers) -> str:
        """Hand the event the current child holds to ``twin`` too, as SQS does when a message's
        visibility ends while its first worker is still at it; the twin's outcome."""
        assert self.last_event is not None
        return self._run_child(self.last_event, containers=twin, chaos=Chaos())[0]

    def _run_child(
        self,
        event: dict[str, Any],
        env: dict[str, str] | None = None,
        *,
        containers: Containers | None = None,
        chaos: Chaos | None = None,
        clock_ahead: timedelta = timedelta(0),
    ) -> tuple[str, set[str]]:
        with tempfile.TemporaryDirectory() as scratch:
            answer, errors = Path(scratch) / "response.json", Path(scratch) / "stderr"
            code = (containers or self.containers).run(
                event, answer, errors, chaos or self.chaos, env, clock_ahead=clock_ahead
            )
            if code == -signal.SIGKILL:
                return "killed", set()
            if code != 0 or not answer.exists():
                raise AssertionError(f"the turn container crashed:\n{errors.read_text()[-4000:]}")
            response = json.loads(answer.read_text())
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        return ("failed" if failed else "done"), failed


class Containers:
    """``turn_child``: the handler imported once, a forked container per delivery. ``release``: the
    root of another release's checkout (its ``layers/kioku`` and ``functions``) to run instead."""

    def __init__(self, dynamodb_url: str, sqs_url: str | None = None, *, release: Path | None = None) -> None:
        env = {**os.environ, "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_url, "PYTHONUNBUFFERED": "1"}
        if release is not None:
            env["PYTHONPATH"] = str(release / "layers" / "kioku")  # ahead of this checkout's install
        if sqs_url is not None:
            env["AWS_ENDPOINT_URL_SQS"] = sqs_url
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.turn_child"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self,
        event: dict[str, Any],
        answer: Path,
        errors: Path,
        chaos: Chaos,
        env: dict[str, str] | None = None,
        *,
        clock_ahead: timedelta = timedelta(0),
    ) -> int:
        """Run one container (``env`` added to its environment, its clock ``clock_ahead``) to its
        end; its exit code (negative: the signal that killed it)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        request = {
            "event": event,
            "answer": str(answer),
            "errors": str(errors),
            "env": env or {},
            "clock_ahead_seconds": clock_ahead.total_seconds(),
        }
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        chaos.child_pid = int(self._read("pid"))
        try:
            return int(self._read("exit"))
        finally:
            chaos.child_pid = None

    def _read(self, word: str) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.startswith(word + " "):
            raise AssertionError(f"turn_child said {line!r}, expected {word}")
        return line.split(" ", 1)[1]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=CHILD_TIMEOUT_SECONDS)


@dataclass
class CrashWorld:
    """A stack with every hop behind the chaos: what a crash-point module runs its turns on."""

    stack: LocalStack
    llm: OpenAIStandIn
    harness: CrashHarness
    env: dict[str, str]
    embeddings: EmbeddingsStandIn
    dynamodb_url: str
    sqs_url: str

    def entered(self, monkeypatch: pytest.MonkeyPatch) -> CrashWorld:
        """The stack, its environment set again for one test (every test starts from a bare one):
        what a module's ``world`` fixture hands its tests."""
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        return self


@contextmanager
def crash_world(responder: Responder) -> Iterator[CrashWorld]:
    """One stack (the model answering with ``responder``), its DynamoDB and SQS behind proxies, its
    stand-ins' requests intercepted, and the children that run TurnFunction."""
    chaos = Chaos()
    with (
        OpenAIStandIn(api_key="stand-in-key", responder=responder) as llm,
        EmbeddingsStandIn(api_key="stand-in-key") as embeddings,
        LocalStack(llm_base_url=llm.base_url) as stack,
        DynamoDbProxy(stack.moto_url, chaos) as proxy,
        SqsProxy(stack.moto_url, chaos) as sqs,
    ):
        containers = Containers(proxy.url, sqs.url)
        stack.discord.interceptor = lambda when, request: chaos.intercept("discord", when, request)
        llm.interceptor = lambda when, request: chaos.intercept("llm", when, request)
        embeddings.interceptor = lambda when, request: chaos.intercept("embeddings", when, request)
        env = {name: os.environ[name] for name in stack._saved_env}
        try:
            harness = CrashHarness(stack, chaos, containers, sqs)
            yield CrashWorld(stack, llm, harness, env, embeddings, proxy.url, sqs.url)
        finally:
            containers.close()


MANAGE_GUILD: Final = str(1 << 5)


def add_luna(stack: LocalStack, guild_id: str, persona_id: str) -> str:
    """Luna, an alter persona of ``guild_id``, added through /persona add as a manager would."""
    import json

    from kioku.playground.events import slash_command
    from kioku.signatures import sign_request

    payload = slash_command(
        stack.application_id,
        "persona",
        "add",
        {"name": "Luna", "prompt": "You are {bot}, calm and nocturnal."},
        guild_id=guild_id,
        permissions=MANAGE_GUILD,
        interaction_id=persona_id,
    )
    body = json.dumps(payload).encode()
    headers = {"content-type": "application/json", **sign_request(stack.signing_key, body)}
    assert (
        httpx.post(stack.urls["interactions"], content=body, headers=headers, timeout=10).status_code == 200
    )
    return persona_id


@contextmanager
def twin_of(world: CrashWorld) -> Iterator[Containers]:
    """A second TurnFunction beside ``world``'s, for a job SQS hands out twice at once."""
    containers = Containers(world.dynamodb_url, world.sqs_url)
    try:
        yield containers
    finally:
        containers.close()
