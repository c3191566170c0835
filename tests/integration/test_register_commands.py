"""``kioku register-commands``: the router's registry, sent in one PUT to a local Discord stand-in."""

from __future__ import annotations

import pytest

from kioku.playground.standins import DiscordStandIn
from kioku.services.commands.registry import by_name, definitions
from kioku.services.registration import run

APPLICATION_ID = "100000000000000001"
TOKEN = "register-test-token"


@pytest.fixture
def discord(monkeypatch):
    with DiscordStandIn(token=TOKEN, application_id=APPLICATION_ID) as stand_in:
        monkeypatch.setenv("DISCORD_API_BASE_URL", stand_in.base_url)
        monkeypatch.setenv("DISCORD_APPLICATION_ID", APPLICATION_ID)
        monkeypatch.setenv("DISCORD_BOT_TOKEN", TOKEN)
        yield stand_in


def test_global_registration_is_one_put_of_the_routers_commands(discord, capsys):
    assert run([]) == 0
    puts = discord.requests_to("PUT", f"/api/v10/applications/{APPLICATION_ID}/commands")
    assert len(puts) == 1 and len(discord.requests) == 1
    sent = puts[0].body
    assert sent == definitions()
    assert {command["name"] for command in sent} == set(by_name())
    assert "registered" in capsys.readouterr().out


def test_registration_carries_the_adding_subcommands_and_the_remember_this_message_command(discord):
    assert run([]) == 0
    (put,) = discord.requests_to("PUT", f"/api/v10/applications/{APPLICATION_ID}/commands")
    sent = {command["name"]: command for command in put.body}
    remember = sent["Remember this"]
    assert (remember["type"], remember["description"], "options" in remember) == (3, "", False)
    for command, options in (
        ("personal", ["content", "all_personas", "expires_in_days"]),
        ("server", ["content", "persona", "expires_in_days"]),
    ):
        group = next(option for option in sent[command]["options"] if option["name"] == "memories")
        (add,) = [option for option in group["options"] if option["name"] == "add"]
        assert [option["name"] for option in add["options"]] == options
        assert [option.get("required", False) for option in add["options"]] == [True, False, False]


def test_guild_registration_targets_the_guild(discord):
    assert run(["--guild", "200000000000000001"]) == 0
    assert discord.requests_to(
        "PUT", f"/api/v10/applications/{APPLICATION_ID}/guilds/200000000000000001/commands"
    )


def test_a_refusal_is_reported_and_exits_1(discord, capsys):
    discord.fail_next(400, {"code": 50035, "message": "Invalid Form Body"})
    assert run([]) == 1
    assert "Invalid Form Body" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("unset", "argv", "message"),
    [
        ("DISCORD_BOT_TOKEN", [], "DISCORD_BOT_TOKEN must be set"),
        ("DISCORD_APPLICATION_ID", [], "DISCORD_APPLICATION_ID must be set"),
        (None, ["--guild", "abc"], "--guild must be a guild id"),
        (None, ["--guild", "١٢٣٤٥٦٧٨٩٠١٢٣٤٥٦٧٨"], "--guild must be a guild id"),
        (None, ["--guild", "１２３４５６７８９０１２３４５６７８"], "--guild must be a guild id"),
        (None, ["--guild", "1234567890123"], "--guild must be a guild id"),
    ],
    ids=["no-token", "no-application-id", "letters", "arabic-indic-digits", "fullwidth-digits", "too-short"],
)
def test_bad_input_is_named_and_nothing_is_sent(discord, monkeypatch, capsys, unset, argv, message):
    if unset:
        monkeypatch.delenv(unset)
    assert run(argv) == 2
    assert message in capsys.readouterr().err
    assert discord.requests == []


@pytest.fixture
def stack_secret(aws):
    import json

    import boto3

    secrets = boto3.client("secretsmanager")
    return secrets.create_secret(
        Name="kioku", SecretString=json.dumps({"DISCORD_BOT_TOKEN": TOKEN, "LLM_API_KEY": "k"})
    )["ARN"]


@pytest.mark.parametrize("via", ["--secret-arn", "KIOKU_SECRET_ARN"])
def test_the_token_is_read_from_the_stacks_secret_never_typed(discord, monkeypatch, stack_secret, via):
    # Given no token in the environment, only the secret's ARN (not a secret itself)
    monkeypatch.delenv("DISCORD_BOT_TOKEN")
    argv = ["--secret-arn", stack_secret] if via == "--secret-arn" else []
    if via == "KIOKU_SECRET_ARN":
        monkeypatch.setenv("KIOKU_SECRET_ARN", stack_secret)

    # When the commands are registered, they go out with the secret's token
    assert run(argv) == 0
    (put,) = discord.requests_to("PUT", f"/api/v10/applications/{APPLICATION_ID}/commands")
    assert put.headers["authorization"] == f"Bot {TOKEN}"


def test_a_secret_that_cannot_be_read_is_named_and_nothing_is_sent(discord, monkeypatch, aws, capsys):
    monkeypatch.delenv("DISCORD_BOT_TOKEN")
    missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf"

    assert run(["--secret-arn", missing]) == 2
    assert "the secret could not be read" in capsys.readouterr().err
    assert discord.requests == []


def test_there_is_no_way_to_pass_the_token_as_an_argument(discord, monkeypatch):
    monkeypatch.delenv("DISCORD_BOT_TOKEN")
    with pytest.raises(SystemExit) as refused:
        run(["--token", TOKEN])
    assert refused.value.code == 2
    assert discord.requests == []
