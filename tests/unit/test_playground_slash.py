"""The playground reads a slash command the way Discord, the README and /help write it
(``option:value``), against the command tree kioku registers; a line Discord would not send is an
error that says what is wrong, never sent with a part dropped."""

from __future__ import annotations

import pytest

from kioku.playground.slash import UnreadableCommand, parse, split_assignment
from kioku.services.commands.registry import definitions

CHANNELS = {"general": "300000000000000001", "#general": "300000000000000001"}


def read(line: str):
    return parse(line, definitions(), CHANNELS.get)


@pytest.mark.parametrize(
    "line", ["/server stm parameters refresh_cadence:3", "/server stm parameters refresh_cadence=3"]
)
def test_an_option_is_written_with_a_colon_as_in_discord_or_with_an_equals_sign(line):
    command = read(line)

    assert (command.name, command.path, command.options) == (
        "server",
        "stm parameters",
        {"refresh_cadence": 3},
    )
    assert command.option_types == {"refresh_cadence": 4}


def test_a_choice_and_a_boolean_are_read_as_discord_sends_them():
    assert read("/server memories moderation mode:approval").options == {"mode": "approval"}
    assert read("/server privacy bypass enabled:true").options == {"enabled": True}
    assert read("/server privacy channel channel:#general mode:private").options == {
        "channel": "300000000000000001",
        "mode": "private",
    }


def test_a_quoted_value_keeps_its_spaces_and_commas():
    assert read('/server addressing trigger_words:"kioku, kio"').options == {"trigger_words": "kioku, kio"}


def test_the_words_after_a_text_option_continue_it_as_in_discords_box():
    command = read("/chat message:hello there, kioku")

    assert command.options == {"message": "hello there, kioku"}


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("/server stm parameters refresh_cadance:3", "has no option 'refresh_cadance'"),
        ("/server stm parameters refresh_cadence:three", "takes a whole number, not 'three'"),
        ("/server memories moderation mode:sometimes", "mode is one of open, approval"),
        ("/server memories moderation approval", "'approval' is not option:value"),
        ("/server memories", "needs one of: list, forget, moderation, review"),
        ("/server stm parametres refresh_cadence:3", "needs one of: parameters"),
        ("/sever stm", "no command /sever"),
        ("/server privacy bypass enabled:maybe", "takes true or false"),
        ("/server privacy channel channel:#nowhere mode:private", "no channel called '#nowhere'"),
        ("/server stm parameters refresh_cadence:2 refresh_cadence:3", "given twice"),
        ("/server addressing trigger_words:", "give trigger_words a value"),
        ('/help "unclosed', "could not read that command"),
    ],
)
def test_a_line_discord_would_not_send_is_refused_with_what_is_wrong(line, complaint):
    with pytest.raises(UnreadableCommand, match=complaint):
        read(line)


@pytest.mark.parametrize(
    ("word", "pair"),
    [
        ("name:Kioku", ("name", "Kioku")),
        ("prompt=You are {bot}: kind", ("prompt", "You are {bot}: kind")),
        ("https://example.com", None),
        ("hello", None),
    ],
)
def test_a_field_is_name_colon_or_equals_value(word, pair):
    assert split_assignment(word) == pair


def test_help_alone_is_its_overview_as_discords_picker_offers_it_first():
    assert (read("/help").name, read("/help").path) == ("help", "overview")
    # ...while a group without an overview still says what it needs
    with pytest.raises(UnreadableCommand, match="needs one of"):
        read("/personal memories")
