"""The `kioku` console script's own surface: its command list, its version."""

from __future__ import annotations

import pytest

from kioku.cli import SUBCOMMANDS, main


def test_kioku_alone_lists_each_command_once_with_what_it_does(capsys):
    code = main([])

    shown = capsys.readouterr().out
    assert code == 2
    for name, (_module, summary) in SUBCOMMANDS.items():
        assert shown.count(name) == 1 + summary.count(name), name
        assert f"{name:<18} {summary}" in shown


def test_help_is_the_same_list_and_succeeds(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])

    assert exit_.value.code == 0
    assert capsys.readouterr().out.count("register-commands") == 1
