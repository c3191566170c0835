"""The settings model: defaults, validation, and errors that name the variable without its value."""

from __future__ import annotations

import pytest

from kioku.config import ConfigurationError, Settings

KEY = "ab" * 32
REQUIRED = {
    "TABLE_NAME": "kioku-table",
    "TURN_QUEUE_URL": "https://sqs.example/123/q.fifo",
    "DISCORD_APPLICATION_ID": "123456789012345678",
    "DISCORD_PUBLIC_KEY": KEY,
    "RELAY_PUBLIC_KEY": KEY,
}


def test_defaults_are_the_contracts():
    settings = Settings.from_environ(REQUIRED)
    assert settings.DISCORD_API_BASE_URL == "https://discord.com/api/v10"
    assert settings.LLM_PROVIDER == "openai"
    assert settings.LLM_BASE_URL == "https://api.openai.com/v1"
    assert settings.LLM_SUPPORTS_TOOLS is True and settings.LLM_SUPPORTS_VISION is True
    assert settings.DIALOGUE_HISTORY_LIMIT == 10
    assert settings.MAX_ATTACHMENT_TEXT_CHARS == 8000 and settings.DISCORD_CDN_BASE_URL is None
    assert (
        settings.SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT,
        settings.SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS,
        settings.SHORT_TERM_MEMORY_TTL_HOURS,
        settings.SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS,
        settings.SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH,
        settings.SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL,
        settings.STM_MAX_CATEGORIES,
        settings.STM_JANITOR_RETENTION_DAYS,
        settings.STM_FRESH_WINDOW_MINUTES,
        settings.STM_FRESH_INJECTION_DEPTH,
        settings.MAX_SERVER_MEMORIES,
        settings.MAX_PERSONAL_MEMORIES,
        settings.MAX_MEMORY_LENGTH,
    ) == (6, 3, 12, 24, 1500, 10, 5, 90, 60, 2, 100, 100, 1000)


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_a_missing_variable_is_named(missing):
    environ = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(ConfigurationError, match=f"{missing} is required but not set"):
        Settings.from_environ(environ)


def test_a_blank_variable_counts_as_missing():
    with pytest.raises(ConfigurationError, match="TABLE_NAME is required"):
        Settings.from_environ({**REQUIRED, "TABLE_NAME": "   "})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DISCORD_PUBLIC_KEY", "not-hex"),
        ("RELAY_PUBLIC_KEY", "ab" * 31),
        ("DISCORD_APPLICATION_ID", "abc"),
        ("LLM_PROVIDER", "novelai-but-typo"),
        ("LLM_SUPPORTS_TOOLS", "maybe"),
        ("DIALOGUE_HISTORY_LIMIT", "0"),
        ("MAX_MEMORY_LENGTH", "lots"),
        # the categories form is one Discord modal, which holds five inputs: no sixth category fits
        ("STM_MAX_CATEGORIES", "6"),
        ("MAX_ATTACHMENT_TEXT_CHARS", "-1"),
        ("DISCORD_CDN_BASE_URL", "ftp://cdn.example"),
        ("DISCORD_CDN_BASE_URL", "https://user@cdn.example"),
    ],
)
def test_an_invalid_variable_is_named(name, value):
    with pytest.raises(ConfigurationError, match=name):
        Settings.from_environ({**REQUIRED, name: value})


def test_errors_never_echo_secret_values():
    secret = "sk-very-secret-value"
    with pytest.raises(ConfigurationError) as raised:
        Settings.from_environ({"LLM_API_KEY": secret, "DISCORD_BOT_TOKEN": secret})
    assert secret not in str(raised.value)


def test_secrets_are_hidden_in_repr():
    settings = Settings.from_environ({**REQUIRED, "DISCORD_BOT_TOKEN": "tok-123", "LLM_API_KEY": "sk-123"})
    assert "tok-123" not in repr(settings) and "sk-123" not in repr(settings)
    assert settings.DISCORD_BOT_TOKEN.get_secret_value() == "tok-123"


def test_a_function_lambda_runs_refuses_the_scripted_model_which_its_layer_does_not_ship():
    # Given the playground's offline model, where Lambda (or sam local) runs the function
    deployed = {**REQUIRED, "LLM_PROVIDER": "scripted", "AWS_LAMBDA_FUNCTION_NAME": "kioku-TurnFunction-1"}

    # Then the settings are refused, in one sentence that says what to do
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_environ(deployed)
    assert str(refused.value) == (
        "invalid configuration: LLM_PROVIDER scripted is the playground's offline model, which a deployed "
        "function does not have: unset LLM_PROVIDER (openai, any OpenAI-compatible server)"
    )
    # and off Lambda (the playground, the tests) it is the model it always was
    assert Settings.from_environ({**REQUIRED, "LLM_PROVIDER": "scripted"}).LLM_PROVIDER == "scripted"


@pytest.mark.parametrize(
    ("name", "value", "read"),
    [
        ("TURN_MAX_ATTEMPTS", " 3 ", 3),
        ("TURN_MAX_ATTEMPTS", "3.00", 3),
        ("LLM_SUPPORTS_TOOLS", "On", True),
        ("LLM_SUPPORTS_VISION", "no", False),
        ("LLM_TIMEOUT_SECONDS", "1e1", 10.0),
        ("LLM_PROVIDER", "scripted", "scripted"),
        ("DISCORD_PUBLIC_KEY", KEY.upper(), KEY),
        ("DISCORD_BOT_TOKEN", " tok ", "tok"),
    ],
)
def test_values_are_read_as_the_pydantic_model_read_them(name, value, read):
    # kioku.config checks the environment without pydantic, by its rules (issue 41 item 6)
    settings = Settings.from_environ({**REQUIRED, name: value})
    got = getattr(settings, name)
    assert (got.get_secret_value() if name == "DISCORD_BOT_TOKEN" else got) == read
    assert type(got if name == "DISCORD_BOT_TOKEN" else read) is type(got)


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("TURN_MAX_ATTEMPTS", "6", "Input should be less than or equal to 5"),
        ("TURN_MAX_ATTEMPTS", "3.", "Input should be a valid integer, unable to parse string as an integer"),
        ("TURN_MAX_ATTEMPTS", "３", "Input should be a valid integer, unable to parse string as an integer"),
        ("LLM_TIMEOUT_SECONDS", "0", "Input should be greater than 0"),
        ("LLM_TIMEOUT_SECONDS", "soon", "Input should be a valid number, unable to parse string as a number"),
        ("LLM_SUPPORTS_TOOLS", " true ", "Input should be a valid boolean, unable to interpret input"),
        ("LLM_PROVIDER", "OpenAI", "Input should be 'openai' or 'scripted'"),
        ("LLM_PROVIDER", " openai ", "Input should be 'openai' or 'scripted'"),
        ("TABLE_NAME", "ab", "String should have at least 3 characters"),
        ("DISCORD_APPLICATION_ID", "12a", "String should match pattern '^[0-9]{1,20}$'"),
        ("RELAY_PUBLIC_KEY", "ab", "must be 64 hex characters (a 32-byte Ed25519 public key)"),
    ],
)
def test_a_refusal_names_the_variable_in_pydantics_words(name, value, reason):
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_environ({**REQUIRED, name: value})
    assert str(refused.value) == f"invalid configuration: {name} {reason}"
