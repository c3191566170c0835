"""``kioku relay``: the key pair it prints, and its refusal to start on a bad environment."""

from __future__ import annotations

import pytest
from nacl.signing import SigningKey

from kioku.cli import main
from kioku.config import ConfigurationError
from kioku.relay.cli import read_settings, run
from kioku.signatures import RequestVerifier, sign_request

SECRET_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAx.GabCdE.secret-token-value"
SEED = "11" * 32
RELAY_URL = "https://abcdefghij.lambda-url.eu-west-1.on.aws/"
RELAY_VARIABLES = ("DISCORD_BOT_TOKEN", "RELAY_SIGNING_KEY", "RELAY_URL")
REQUIRED = {"DISCORD_BOT_TOKEN": SECRET_TOKEN, "RELAY_SIGNING_KEY": SEED, "RELAY_URL": RELAY_URL}


def printed_pair(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if line and not line.startswith("#"))


def test_new_key_prints_a_seed_and_its_public_key(capsys):
    # When
    exit_code = run(["--new-key"])

    # Then the printed public key is the one the printed seed signs for
    assert exit_code == 0
    pair = printed_pair(capsys.readouterr().out)
    assert set(pair) == {"RELAY_SIGNING_KEY", "RELAY_PUBLIC_KEY"}
    assert (
        bytes(SigningKey(bytes.fromhex(pair["RELAY_SIGNING_KEY"])).verify_key).hex()
        == pair["RELAY_PUBLIC_KEY"]
    )
    headers = sign_request(pair["RELAY_SIGNING_KEY"], b"{}")
    RequestVerifier(pair["RELAY_PUBLIC_KEY"]).verify(
        b"{}", headers["x-signature-ed25519"], headers["x-signature-timestamp"]
    )


def test_new_key_is_fresh_each_time(capsys):
    run(["--new-key"])
    first = printed_pair(capsys.readouterr().out)
    run(["--new-key"])
    second = printed_pair(capsys.readouterr().out)

    assert first["RELAY_SIGNING_KEY"] != second["RELAY_SIGNING_KEY"]


def test_new_key_through_the_kioku_dispatcher(capsys, monkeypatch):
    for name in RELAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    assert main(["relay", "--new-key"]) == 0
    assert "RELAY_PUBLIC_KEY=" in capsys.readouterr().out


def test_missing_variables_are_all_named(capsys, monkeypatch):
    # Given an environment without any relay variable
    for name in RELAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    # When
    exit_code = run([])

    # Then it refuses to start and names each missing variable
    assert exit_code == 2
    error = capsys.readouterr().err
    for name in RELAY_VARIABLES:
        assert f"{name} is required" in error


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RELAY_SIGNING_KEY", "abc123"),
        ("RELAY_SIGNING_KEY", "zz" * 32),
        ("RELAY_URL", "ftp://example.com/relay"),
        ("RELAY_URL", "not a url"),
        ("RELAY_URL", "https://"),
        ("DISCORD_BOT_TOKEN", f"Bot {SECRET_TOKEN}"),
        ("DISCORD_API_BASE_URL", "discord.com/api/v10"),
        ("RELAY_MAX_ATTEMPTS", "0"),
        ("RELAY_MAX_ATTEMPTS", "three"),
        ("RELAY_MAX_ATTEMPTS", "2.5"),
        ("RELAY_MAX_DELAY_SECONDS", "-1"),
        ("RELAY_MAX_DELAY_SECONDS", "inf"),
        ("RELAY_DRAIN_TIMEOUT_SECONDS", "nan"),
        ("RELAY_DRAIN_TIMEOUT_SECONDS", "86400"),
        ("RELAY_BUFFER_SIZE", "0"),
    ],
)
def test_an_invalid_variable_is_named_and_no_secret_is_echoed(capsys, monkeypatch, variable, value):
    # Given a valid environment with one bad variable
    monkeypatch.setenv("DISCORD_BOT_TOKEN", SECRET_TOKEN)
    monkeypatch.setenv("RELAY_SIGNING_KEY", SEED)
    monkeypatch.setenv("RELAY_URL", RELAY_URL)
    monkeypatch.setenv(variable, value)

    # When
    exit_code = run([])

    # Then
    assert exit_code == 2
    error = capsys.readouterr().err
    assert variable in error
    assert SECRET_TOKEN not in error
    assert SEED not in error


def test_read_settings_accepts_a_valid_environment_and_hides_secrets_from_repr():
    settings = read_settings(
        {"DISCORD_BOT_TOKEN": f" {SECRET_TOKEN} ", "RELAY_SIGNING_KEY": SEED.upper(), "RELAY_URL": RELAY_URL}
    )

    assert (settings.bot_token, settings.signing_key_hex, settings.relay_url) == (
        SECRET_TOKEN,
        SEED,
        RELAY_URL,
    )
    assert settings.public_key_hex == bytes(SigningKey(bytes.fromhex(SEED)).verify_key).hex()
    assert SECRET_TOKEN not in repr(settings)
    assert SEED not in repr(settings)


def test_optional_settings_default_to_discord_and_the_documented_delivery_values():
    settings = read_settings(REQUIRED)

    assert settings.discord_api_base_url == "https://discord.com/api/v10"
    assert (
        settings.max_attempts,
        settings.max_delay_seconds,
        settings.drain_timeout_seconds,
        settings.buffer_size,
    ) == (5, 30.0, 10.0, 1000)


def test_optional_settings_are_read_from_the_environment():
    settings = read_settings(
        {
            **REQUIRED,
            "DISCORD_API_BASE_URL": "http://127.0.0.1:8080/api/v10/",
            "RELAY_MAX_ATTEMPTS": "2",
            "RELAY_MAX_DELAY_SECONDS": "0.25",
            "RELAY_DRAIN_TIMEOUT_SECONDS": "0",
            "RELAY_BUFFER_SIZE": " 50 ",
        }
    )

    # The trailing slash goes: hikari appends each route (which starts with "/") to the base
    assert settings.discord_api_base_url == "http://127.0.0.1:8080/api/v10"
    assert (
        settings.max_attempts,
        settings.max_delay_seconds,
        settings.drain_timeout_seconds,
        settings.buffer_size,
    ) == (2, 0.25, 0.0, 50)


def test_read_settings_raises_a_configuration_error():
    with pytest.raises(ConfigurationError, match="RELAY_URL"):
        read_settings({"DISCORD_BOT_TOKEN": SECRET_TOKEN, "RELAY_SIGNING_KEY": SEED})


def test_a_token_discord_could_never_have_issued_is_refused_before_connecting(capsys, monkeypatch):
    # Given a well-formed environment whose token is not shaped like a bot token
    pytest.importorskip("hikari")
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-a-token")
    monkeypatch.setenv("RELAY_SIGNING_KEY", SEED)
    monkeypatch.setenv("RELAY_URL", RELAY_URL)

    # When
    exit_code = run([])

    # Then it stops for good (exit 3: no restart helps) with a clear message, without echoing the token
    assert exit_code == 3
    error = capsys.readouterr().err
    assert "DISCORD_BOT_TOKEN" in error
    assert "not-a-token" not in error
