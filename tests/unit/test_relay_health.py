"""The relay's ``/healthz``: its state (shard sessions, counters) and the endpoint over loopback."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import httpx
import pytest

from kioku.relay.cli import read_settings, run
from kioku.relay.forwarder import ForwarderCounters
from kioku.relay.health import HealthServer, HealthServerError, RelayHealth, probe

REQUIRED = {
    "DISCORD_BOT_TOKEN": "MTAwMDAwMDAwMDAwMDAwMDAx.GabCdE.secret-token-value",
    "RELAY_SIGNING_KEY": "11" * 32,
    "RELAY_URL": "https://abcdefghij.lambda-url.eu-west-1.on.aws/",
}


def test_a_relay_with_no_session_yet_is_starting():
    status, body = RelayHealth(ForwarderCounters()).report()

    assert status == 503
    assert body["status"] == "starting"
    assert body["shards"] == {}


def test_ok_only_once_every_shard_of_the_process_is_connected():
    # Given a process that opens shards 2 and 5
    health = RelayHealth(ForwarderCounters(), shard_ids=[2, 5])

    # When one of them connects, it is still starting
    health.shard_connected(2, 6)
    assert health.report()[0] == 503
    assert health.report()[1]["status"] == "starting"
    assert health.report()[1]["shards"] == {"2": True, "5": False}

    # When the other connects, it is ok
    health.shard_connected(5, 6)
    assert health.report() == (
        200,
        {
            "status": "ok",
            "shards": {"2": True, "5": True},
            "forwarded": 0,
            "skipped_own": 0,
            "dropped": 0,
            "failed": 0,
            "buffered": 0,
        },
    )


def test_a_lost_session_is_disconnected_until_it_is_back():
    # Given a connected process of two shards
    health = RelayHealth(ForwarderCounters(), shard_ids=[0, 1])
    health.shard_connected(0, 2)
    health.shard_connected(1, 2)

    # When shard 1 loses its session
    health.shard_disconnected(1)

    # Then the process is disconnected, naming the shard
    status, body = health.report()
    assert (status, body["status"], body["shards"]) == (503, "disconnected", {"0": True, "1": False})

    # When it resumes, the process is ok again
    health.shard_connected(1, 2)
    assert health.report()[0] == 200


def test_without_ids_the_shards_are_learnt_from_the_count():
    # Given a process that opens every shard Discord recommends (no ids given)
    health = RelayHealth(ForwarderCounters())

    # When the first of three shards connects
    health.shard_connected(0, 3)

    # Then the other two are awaited
    assert health.report()[1]["shards"] == {"0": True, "1": False, "2": False}
    assert health.report()[1]["status"] == "starting"


def test_the_counts_are_the_forwarders_own_as_they_move():
    # Given the forwarder's counters and its buffer
    counters = ForwarderCounters()
    buffered = [0]
    health = RelayHealth(counters, shard_ids=[0], buffered=lambda: buffered[0])

    # When it forwards, fails, drops and buffers
    counters.forwarded += 3
    counters.failed += 1
    counters.dropped += 2
    counters.skipped_own += 4
    buffered[0] = 7

    # Then the report shows it
    _, body = health.report()
    assert {k: body[k] for k in ("forwarded", "failed", "dropped", "skipped_own", "buffered")} == {
        "forwarded": 3,
        "failed": 1,
        "dropped": 2,
        "skipped_own": 4,
        "buffered": 7,
    }


@pytest.fixture
def served() -> Iterator[tuple[RelayHealth, str]]:
    health = RelayHealth(ForwarderCounters(), shard_ids=[0])
    with HealthServer(health, "127.0.0.1", 0) as server:
        yield health, server.url


def test_the_endpoint_answers_503_then_200_as_json(served):
    # Given the endpoint of a relay that is starting
    health, url = served
    first = httpx.get(url, timeout=5)

    # When its shard connects
    health.shard_connected(0, 1)
    second = httpx.get(url, timeout=5)

    # Then it answered 503 and then 200, each time the JSON report, never cached
    assert (first.status_code, first.json()["status"]) == (503, "starting")
    assert (second.status_code, second.json()["status"]) == (200, "ok")
    assert second.headers["content-type"] == "application/json"
    assert second.headers["cache-control"] == "no-store"
    assert json.loads(second.content) == health.report()[1]


def test_head_answers_the_status_without_a_body_and_other_paths_are_404(served):
    health, url = served
    health.shard_connected(0, 1)

    head = httpx.head(url, timeout=5)
    other = httpx.get(url.replace("/healthz", "/metrics"), timeout=5)

    assert (head.status_code, head.content) == (200, b"")
    assert other.status_code == 404


def test_health_settings_default_to_off_on_loopback_and_flags_win():
    assert (read_settings(REQUIRED).health_port, read_settings(REQUIRED).health_host) == (None, "127.0.0.1")
    environ = {**REQUIRED, "RELAY_HEALTH_PORT": "8080", "RELAY_HEALTH_HOST": "0.0.0.0"}
    assert (read_settings(environ).health_port, read_settings(environ).health_host) == (8080, "0.0.0.0")
    flags = {"--health-port": "9000", "--health-host": "::1"}
    assert (read_settings(environ, flags).health_port, read_settings(environ, flags).health_host) == (
        9000,
        "::1",
    )


@pytest.mark.parametrize("port", ["-1", "65536", "http", "80.5"])
def test_a_bad_health_port_exits_2(capsys, monkeypatch, port):
    for name, value in REQUIRED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RELAY_HEALTH_PORT", port)

    assert run([]) == 2
    assert "RELAY_HEALTH_PORT must be a port number from 0 to 65535" in capsys.readouterr().err


def test_a_taken_health_port_exits_2_before_connecting(capsys, monkeypatch):
    # Given a port something else already listens on
    pytest.importorskip("hikari")
    for name, value in REQUIRED.items():
        monkeypatch.setenv(name, value)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        # When the relay is told to serve /healthz there
        exit_code = run(["--health-port", str(port)])

    # Then it stops at once, naming the endpoint and the address
    assert exit_code == 2
    assert f"cannot serve /healthz on 127.0.0.1:{port}" in capsys.readouterr().err


def test_the_server_refuses_an_address_it_cannot_bind():
    with pytest.raises(HealthServerError, match=re.escape("cannot serve /healthz on 192.0.2.1:0")):
        HealthServer(RelayHealth(ForwarderCounters()), "192.0.2.1", 0)


def test_the_container_probe_exits_0_only_on_200(served, capsys):
    # Given the endpoint on every address, as in the container, and the probe's view of it
    health, url = served
    environ = {"RELAY_HEALTH_PORT": url.rsplit(":", 1)[1].split("/")[0], "RELAY_HEALTH_HOST": "0.0.0.0"}

    # When / Then the probe fails while starting and passes once connected, printing the report
    assert probe(environ) == 1
    assert '"status":"starting"' in capsys.readouterr().out
    health.shard_connected(0, 1)
    assert probe(environ) == 0
    assert '"status":"ok"' in capsys.readouterr().out
    assert probe({}) == 1
