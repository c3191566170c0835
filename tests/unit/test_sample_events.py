"""events/ holds genuinely signed samples that verify against the key events/env.json configures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kioku.playground.sample_events import THROWAWAY_PUBLIC_KEY, write_events
from kioku.signatures import RequestVerifier, SignatureRejected

EVENTS = Path(__file__).resolve().parents[2] / "events"


@pytest.mark.parametrize("name", ["interactions-ping.json", "interactions-help-stm.json"])
def test_committed_events_are_signed_by_the_documented_key(name):
    event = json.loads((EVENTS / name).read_text())
    env = json.loads((EVENTS / "env.json").read_text())
    timestamp = event["headers"]["x-signature-timestamp"]
    verifier = RequestVerifier(
        env["InteractionsFunction"]["DISCORD_PUBLIC_KEY"], clock=lambda: int(timestamp)
    )
    verifier.verify(event["body"].encode(), event["headers"]["x-signature-ed25519"], timestamp)


def test_regenerated_events_verify_now_and_a_changed_body_does_not(tmp_path):
    write_events(tmp_path)
    event = json.loads((tmp_path / "interactions-ping.json").read_text())
    verifier = RequestVerifier(THROWAWAY_PUBLIC_KEY)
    headers = event["headers"]
    verifier.verify(event["body"].encode(), headers["x-signature-ed25519"], headers["x-signature-timestamp"])
    with pytest.raises(SignatureRejected):
        verifier.verify(
            event["body"].encode() + b" ", headers["x-signature-ed25519"], headers["x-signature-timestamp"]
        )


def test_env_json_names_every_function_of_the_template_and_only_declared_variables():
    from kioku.playground.aws import load_template

    template = load_template()
    functions = {
        name
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    shared = set(template["Globals"]["Function"]["Environment"]["Variables"])
    env = json.loads((EVENTS / "env.json").read_text())
    assert set(env) == functions
    for function, variables in env.items():
        own = template["Resources"][function]["Properties"].get("Environment", {}).get("Variables", {})
        assert set(variables) <= shared | set(own)  # sam local ignores anything else in --env-vars


def test_the_sample_queue_event_carries_a_turn():
    from kioku.domain.turn_jobs import TurnJob

    event = json.loads((EVENTS / "turn-sqs.json").read_text())
    job = TurnJob.from_json(event["Records"][0]["body"])
    assert job.turn_id == "700000000000000001"


def test_every_function_gets_the_retention_because_it_is_also_every_rows_ttl():
    # Issue 11.3: the turn worker and the commands write rows whose TTL is the janitor's retention
    from kioku.playground.aws import load_template

    template = load_template()
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert "JanitorRetentionDays" in str(variables["STM_JANITOR_RETENTION_DAYS"])
