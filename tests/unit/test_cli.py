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


def test_kioku_doctor_help_documents_each_option_and_lists_its_checks(capsys):
    from kioku.services.doctor import CHECKS
    from kioku.services.doctor_cli import run

    with pytest.raises(SystemExit):
        run(["--help"])

    shown = capsys.readouterr().out
    options = shown.split("options:", 1)[1].split("checks:", 1)[0]
    # every option has a line of help after it, none is a bare flag
    entries = [line for line in options.splitlines() if line.startswith("  -")]
    assert len(entries) >= 12
    for entry in entries:
        flag_and_help = entry.strip().split("  ", 1)
        following = options.split(entry, 1)[1].splitlines()[1:2]
        assert len(flag_and_help) == 2 or (following and following[0].startswith(" " * 10)), entry
    checks = shown.split("checks:", 1)[1]
    assert all(f"  {name} " in checks for name in CHECKS)


def test_kioku_doctor_says_what_it_needs_in_one_sentence(monkeypatch, capsys):
    from kioku.services.doctor_cli import run

    monkeypatch.delenv("DISCORD_BOT_TOKEN", raising=False)
    monkeypatch.delenv("KIOKU_SECRET_ARN", raising=False)
    monkeypatch.delenv("DISCORD_APPLICATION_ID", raising=False)

    assert run([]) == 2

    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "kioku doctor cannot run: DISCORD_BOT_TOKEN must be set to the bot token, or --secret-arn "
        "(KIOKU_SECRET_ARN) name its secret; and --interactions-url, --relay-url, --application-id, "
        "--discord-public-key and --relay-public-key are needed (or --stack-name, to read them from the stack)."
    )
