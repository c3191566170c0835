"""``kioku doctor`` against the local stack: real Function URLs on 127.0.0.1, the Discord REST
stand-in as the Developer Portal and the channel, the stand-in model answering the test turn."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from kioku.playground.stack import PLAYGROUND_BOT_TOKEN, LocalStack
from kioku.services.doctor import CHECKS, Outcome, Target, examine, report
from kioku.services.registration import register_commands
from kioku.signatures import new_key_pair
from tests.e2e.conftest import GENERAL, GUILD, STAND_IN_REPLY

pytestmark = pytest.mark.e2e


def target_of(stack: LocalStack, **changes) -> Target:
    """What `kioku doctor --stack-name` reads of a deployed stack, for the local one; its turns are
    taken off the queue while the doctor waits for the reply, as Lambda's poller would."""
    target = Target(
        interactions_url=stack.urls["interactions"],
        relay_url=stack.urls["relay"],
        application_id=stack.application_id,
        discord_public_key=stack.public_key,
        relay_public_key=stack.relay_public_key,
        bot_token=PLAYGROUND_BOT_TOKEN,
        api_base_url=stack.discord.base_url,
        relay_signing_key=stack.relay_signing_key,
        discord_signing_key=stack.signing_key,
        secret_bot_token=PLAYGROUND_BOT_TOKEN,
        guild_id=GUILD,
        channel_id=GENERAL,
        timeout_seconds=5,
        pause=lambda seconds: stack.deliver_turns(),
    )
    return replace(target, **changes)


@pytest.fixture
def registered(stack: LocalStack) -> LocalStack:
    from kioku.adapters.discord_rest import DiscordRest

    rest = DiscordRest(stack.discord.base_url, PLAYGROUND_BOT_TOKEN)
    register_commands(rest, stack.application_id, GUILD)
    rest.close()
    return stack


def outcomes(findings) -> dict[str, Outcome]:
    return {finding.check: finding.outcome for finding in findings}


def test_a_healthy_stack_passes_every_check_and_answers_a_test_turn(registered):
    # When the doctor examines the local stack
    findings = examine(target_of(registered))

    # Then every hop is ok, the test turn included, and the exit status is 0
    assert set(outcomes(findings).values()) == {Outcome.OK}, findings
    assert [f.check for f in findings] == list(CHECKS)  # what `kioku doctor --help` lists
    (turn,) = [f for f in findings if f.check == "test-turn"]
    assert STAND_IN_REPLY in turn.detail
    out = io.StringIO()
    assert report(findings, out) == 0 and out.getvalue().count("ok ") == len(CHECKS)


def test_each_broken_hop_is_named(registered):
    # Given a stack whose relay key pair is wrong, whose commands are stale, without the Message
    # Content intent, and with another application's public key
    registered.discord.application_flags = 0
    registered.discord.verify_key = new_key_pair()[1]
    registered.discord.interactions_endpoint_url = None
    registered.discord._commands.clear()
    wrong_relay_key, _ = new_key_pair()

    findings = examine(target_of(registered, relay_signing_key=wrong_relay_key, channel_id=None))

    assert outcomes(findings) == {
        "interactions-ping": Outcome.OK,
        "discord-public-key": Outcome.FAIL,
        "relay-key": Outcome.FAIL,
        "bot-token": Outcome.OK,
        "commands": Outcome.FAIL,
        "message-content-intent": Outcome.FAIL,
        "manage-webhooks": Outcome.OK,
        "test-turn": Outcome.SKIP,
    }
    assert report(findings, io.StringIO()) == 4


def test_a_stack_that_does_not_answer_fails_the_test_turn(registered):
    # Given turns that are never taken off the queue (the worker is down)
    findings = examine(target_of(registered, pause=lambda seconds: None, timeout_seconds=0))

    assert outcomes(findings)["test-turn"] is Outcome.FAIL
    assert registered.deliver_turns()  # the turn was queued; nobody took it


def test_a_wrong_discord_key_on_the_stack_fails_the_signed_ping(registered):
    other_signing_key, _ = new_key_pair()

    findings = examine(target_of(registered, discord_signing_key=other_signing_key, channel_id=None))

    assert outcomes(findings)["interactions-ping"] is Outcome.FAIL


def test_the_command_reads_the_stack_and_its_secret_and_takes_no_secret_as_an_argument(
    registered, monkeypatch, capsys
):
    # Given the stack described by CloudFormation (on the local moto server) and the bot token in
    # the stack's secret only
    import json

    import boto3

    from kioku.services.doctor_cli import run

    for service in ("CLOUDFORMATION", "SECRETS_MANAGER"):
        monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", registered.moto_url)
    secret_arn = boto3.client("secretsmanager").create_secret(
        Name="kioku-doctor", SecretString=json.dumps({"DISCORD_BOT_TOKEN": PLAYGROUND_BOT_TOKEN})
    )["ARN"]
    facts = {
        "InteractionsEndpointUrl": registered.urls["interactions"],
        "RelayEndpointUrl": registered.urls["relay"],
        "DiscordApplicationId": registered.application_id,
        "DiscordPublicKey": registered.public_key,
        "RelayPublicKey": registered.relay_public_key,
        "SecretArn": secret_arn,
    }
    template = {
        "Parameters": {name: {"Type": "String"} for name in facts},
        "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {
            name: {"Value": {"Ref": name}} for name in ("InteractionsEndpointUrl", "RelayEndpointUrl")
        },
    }
    boto3.client("cloudformation").create_stack(
        StackName="kioku",
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in facts.items()],
    )
    monkeypatch.delenv("DISCORD_BOT_TOKEN")  # the functions run in this process: none needs it here
    monkeypatch.setenv("DISCORD_API_BASE_URL", registered.discord.base_url)
    monkeypatch.setenv("RELAY_SIGNING_KEY", registered.relay_signing_key)

    # When the operator runs `kioku doctor --stack-name kioku --guild …`
    failures = run(["--stack-name", "kioku", "--region", "us-east-1", "--guild", GUILD])

    # Then every check it can make from there passes (the test turn needs --channel)
    out = capsys.readouterr().out
    assert failures == 0, out
    assert out.count("ok ") == len(CHECKS) - 2 and "skip test-turn" in out
    assert "skip bot-token" in out  # the token came from the secret: nothing to compare it with
    with pytest.raises(SystemExit):
        run(["--stack-name", "kioku", "--bot-token", PLAYGROUND_BOT_TOKEN])


def test_a_stack_that_cannot_be_read_is_named(registered, monkeypatch, capsys):
    from kioku.services.doctor_cli import run

    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", registered.moto_url)

    assert run(["--stack-name", "no-such-stack", "--region", "us-east-1"]) == 2
    assert "cannot describe stack 'no-such-stack'" in capsys.readouterr().err


def test_a_relay_token_that_is_not_the_stack_secret_s_is_named(registered):
    # Given the doctor run on the relay host after a token reset that reached only the stack's secret
    findings = examine(target_of(registered, secret_bot_token="the-new-token-in-the-secret"))

    (token,) = [f for f in findings if f.check == "bot-token"]
    assert token.outcome is Outcome.FAIL and "secret" in token.detail
    assert "the-new-token" not in token.detail and PLAYGROUND_BOT_TOKEN not in token.detail


def test_a_server_where_kioku_lacks_manage_webhooks_is_named(registered):
    # Given two servers, kioku added to one of them before personas (no Manage Webhooks)
    from kioku.discord.protocol import Permission

    registered.discord.bot_guild_permissions = {
        GUILD: int(Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES),
        "987654321098765432": int(Permission.ADMINISTRATOR),
    }

    findings = examine(target_of(registered, channel_id=None, guild_id=None))

    (webhooks,) = [f for f in findings if f.check == "manage-webhooks"]
    assert webhooks.outcome is Outcome.FAIL
    assert GUILD in webhooks.detail and "987654321098765432" not in webhooks.detail
    # ...and with --guild naming the other server, nothing is wrong there
    elsewhere = examine(target_of(registered, channel_id=None, guild_id="987654321098765432"))
    assert outcomes(elsewhere)["manage-webhooks"] is Outcome.OK
