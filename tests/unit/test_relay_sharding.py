"""``kioku relay --shard-count/--shard-ids`` (and their variables): what is accepted, what is refused."""

from __future__ import annotations

import re

import pytest

from kioku.config import ConfigurationError
from kioku.relay.cli import read_settings, run
from kioku.relay.sharding import ShardingError, ShardPlan, parse_shard_plan

REQUIRED = {
    "DISCORD_BOT_TOKEN": "MTAwMDAwMDAwMDAwMDAwMDAx.GabCdE.secret-token-value",
    "RELAY_SIGNING_KEY": "11" * 32,
    "RELAY_URL": "https://abcdefghij.lambda-url.eu-west-1.on.aws/",
}


def plan(count: str | None, ids: str | None) -> ShardPlan:
    return parse_shard_plan(count, ids, count_source="--shard-count", ids_source="--shard-ids")


@pytest.mark.parametrize(
    ("count", "ids", "expected"),
    [
        (None, None, ShardPlan()),
        ("", "  ", ShardPlan()),
        ("auto", None, ShardPlan()),
        ("AUTO", None, ShardPlan()),
        ("3", None, ShardPlan(count=3)),
        ("2", "1", ShardPlan(count=2, ids=(1,))),
        (" 4 ", "3, 0", ShardPlan(count=4, ids=(3, 0))),
        ("auto", "0,5", ShardPlan(count=None, ids=(0, 5))),
    ],
)
def test_valid_shard_options(count, ids, expected):
    assert plan(count, ids) == expected


@pytest.mark.parametrize(
    ("count", "ids", "message"),
    [
        (None, "0", "--shard-ids needs a shard count too"),
        ("0", None, "--shard-count must be at least 1"),
        ("-2", "0", "--shard-count must be at least 1"),
        ("two", None, "--shard-count must be a whole number of shards or 'auto'"),
        ("1.5", None, "--shard-count must be a whole number"),
        ("2", "2", "shard id 2 is outside --shard-count (2): ids run from 0 to 1"),
        ("2", "-1", "shard id -1 is outside --shard-count (2)"),
        ("3", "0,1,0", "--shard-ids names shard 0 more than once"),
        ("3", "0,,1", "--shard-ids must be comma-separated whole numbers"),
        ("3", "a", "--shard-ids must be comma-separated whole numbers"),
    ],
)
def test_invalid_shard_options_are_refused_naming_the_option(count, ids, message):
    with pytest.raises(ShardingError, match=re.escape(message)):
        plan(count, ids)


def test_the_default_plan_leaves_the_count_to_discord_and_opens_every_shard():
    # Given no shard options
    default = plan(None, None)

    # Then nothing needs fetching up front, and Discord's recommendation decides
    assert not default.needs_recommended_count
    assert default.resolve(3) == ((0, 1, 2), 3)


def test_auto_with_ids_is_checked_against_the_recommended_count():
    # Given ids with a count of 'auto'
    auto = plan("auto", "1")

    # Then the count must be fetched, and the ids must fit it
    assert auto.needs_recommended_count
    assert auto.resolve(2) == ((1,), 2)
    with pytest.raises(ShardingError, match="outside Discord's recommended shard count"):
        auto.resolve(1)


def test_flags_win_over_variables():
    # Given variables for one sharding and flags for another
    environ = {**REQUIRED, "RELAY_SHARD_COUNT": "4", "RELAY_SHARD_IDS": "3"}
    flags = {"--shard-count": "2", "--shard-ids": "1"}

    # When / Then the flags decide
    assert read_settings(environ, flags).shards == ShardPlan(count=2, ids=(1,))
    assert read_settings(environ).shards == ShardPlan(count=4, ids=(3,))
    assert read_settings(environ, {"--shard-ids": "0"}).shards == ShardPlan(count=4, ids=(0,))


def test_no_shard_options_is_the_unsharded_relay():
    assert read_settings(REQUIRED).shards == ShardPlan()


def test_a_bad_variable_is_named_as_the_variable():
    with pytest.raises(ConfigurationError, match="shard id 2 is outside RELAY_SHARD_COUNT"):
        read_settings({**REQUIRED, "RELAY_SHARD_COUNT": "2", "RELAY_SHARD_IDS": "0,2"})


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--shard-ids", "0"], "--shard-ids needs a shard count"),
        (["--shard-count", "0"], "--shard-count must be at least 1"),
        (["--shard-count", "2", "--shard-ids", "0,2"], "shard id 2 is outside --shard-count"),
        (["--shard-count", "2", "--shard-ids", "1,1"], "names shard 1 more than once"),
        (["--shard-count", "many"], "--shard-count must be a whole number"),
    ],
)
def test_kioku_relay_exits_2_on_bad_shard_flags(capsys, monkeypatch, argv, named):
    # Given a valid environment
    for name, value in REQUIRED.items():
        monkeypatch.setenv(name, value)

    # When the relay starts with bad shard flags
    exit_code = run(argv)

    # Then it refuses before connecting, saying why
    assert exit_code == 2
    assert named in capsys.readouterr().err
