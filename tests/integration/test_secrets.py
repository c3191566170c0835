"""Secrets: environment first, then the Secrets Manager secret the template names (on moto)."""

from __future__ import annotations

import json

import boto3
import pytest

from kioku.adapters.secrets import load_secrets, read_secret
from kioku.config import ConfigurationError, Settings


@pytest.fixture
def base_env(env):
    return {k: v for k, v in env.items() if k not in {"DISCORD_BOT_TOKEN", "LLM_API_KEY"}} | {
        "LLM_PROVIDER": "openai"
    }


def test_environment_values_win_and_no_secret_store_is_consulted(env):
    secrets = load_secrets(
        Settings.from_environ({**env, "KIOKU_SECRET_ARN": "arn:aws:secretsmanager:x:1:secret:nope"})
    )
    assert secrets.discord_bot_token == "test-bot-token"
    assert "test-bot-token" not in repr(secrets)


def test_deployed_functions_read_the_secret(base_env):
    arn = boto3.client("secretsmanager").create_secret(
        Name="kioku", SecretString=json.dumps({"DISCORD_BOT_TOKEN": "tok", "LLM_API_KEY": "sk"})
    )["ARN"]
    secrets = load_secrets(Settings.from_environ({**base_env, "KIOKU_SECRET_ARN": arn}))
    assert (secrets.discord_bot_token, secrets.llm_api_key) == ("tok", "sk")


@pytest.mark.parametrize("secret_string", ["not json", json.dumps(["a"]), json.dumps({"LLM_API_KEY": "sk"})])
def test_a_malformed_secret_is_a_clear_configuration_error(base_env, secret_string):
    arn = boto3.client("secretsmanager").create_secret(Name="kioku-bad", SecretString=secret_string)["ARN"]
    with pytest.raises(ConfigurationError, match="KIOKU_SECRET_ARN"):
        load_secrets(Settings.from_environ({**base_env, "KIOKU_SECRET_ARN": arn}))


def test_no_token_and_no_secret_names_both_ways_to_fix_it(base_env):
    with pytest.raises(ConfigurationError, match=r"DISCORD_BOT_TOKEN.*KIOKU_SECRET_ARN"):
        load_secrets(Settings.from_environ(base_env))


def test_operator_tools_read_kiokus_fields_of_the_secret_and_a_null_one_is_absent(base_env):
    arn = boto3.client("secretsmanager").create_secret(
        Name="kioku-partial",
        SecretString=json.dumps({"DISCORD_BOT_TOKEN": None, "LLM_API_KEY": "sk", "NOTES": "not ours"}),
    )["ARN"]
    assert read_secret(arn) == {"LLM_API_KEY": "sk"}
