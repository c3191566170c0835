"""The local stack over real HTTP, and `make run`'s non-interactive mode as CI runs it."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kioku.playground.events import ping, slash_command
from kioku.playground.stack import LocalStack
from kioku.signatures import sign_request

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack():
    with LocalStack() as running:
        yield running


def post_signed(stack: LocalStack, payload: dict, *, tamper: bool = False) -> httpx.Response:
    body = json.dumps(payload).encode()
    headers = {"content-type": "application/json", **sign_request(stack.signing_key, body)}
    if tamper:
        body = body.replace(b"stm", b"ltm")
    return httpx.post(stack.urls["interactions"], content=body, headers=headers, timeout=10)


def test_ping_and_help_over_http(stack):
    assert post_signed(stack, ping(stack.application_id)).json() == {"type": 1}
    response = post_signed(stack, slash_command(stack.application_id, "help", "stm"))
    assert response.status_code == 200
    assert response.json()["data"]["embeds"][0]["title"].startswith("Short-term memory")


def test_tampered_request_over_http_is_401(stack):
    response = post_signed(stack, slash_command(stack.application_id, "help", "stm"), tamper=True)
    assert response.status_code == 401


def test_the_function_url_server_passes_binary_bodies_as_base64(stack):
    body = b"\xff\xfe not utf-8"
    response = httpx.post(
        stack.urls["interactions"],
        content=body,
        headers={"content-type": "application/octet-stream", **sign_request(stack.signing_key, body)},
    )
    assert response.status_code == 400


def run_playground(tmp_path, lines: list[str], **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.txt"
    script.write_text("\n".join(lines) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "kioku.cli", "playground", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_make_run_non_interactive_answers_help_stm_and_exits_0(tmp_path):
    result = run_playground(tmp_path, ["/help stm", ":quit"])
    assert result.returncode == 0, result.stderr
    assert "Short-term memory: what you can customise" in result.stdout
    assert "(only you can see this)" in result.stdout


def test_make_run_non_interactive_exits_1_when_a_line_fails(tmp_path):
    result = run_playground(tmp_path, ['/help "unclosed'])
    assert result.returncode == 1
    assert "could not read that command" in result.stdout


def test_make_run_chats_through_relay_queue_and_worker(tmp_path):
    result = run_playground(
        tmp_path,
        [
            "hello everyone",
            "@kioku remember that I love green tea",
            "@kioku what do I like?",
            ":context",
            ":memory",
            ":in dm",
            "hi in private",
            '/chat message="how are you?"',
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "kioku is not addressed" in out
    assert "I'll remember that." in out
    assert "Memory saved" in out
    # the saved memory is recalled, with its id, in the next turn's model request
    context = out.split("> :context", 1)[1].split("> :memory", 1)[0]
    assert "Long-term memories" in context and "[#" in context and "green tea" in context
    assert 'Alice (alice) said: "hi in private"' in out
    assert 'Alice (alice) said: "how are you?"' in out
    assert "turns since refresh: 2" in out


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_model_url_without_a_key_is_said_at_start_and_the_scripted_model_answers(tmp_path):
    # Given LLM_BASE_URL set and LLM_API_KEY forgotten
    env = {k: v for k, v in os.environ.items() if k != "LLM_API_KEY"}
    script = tmp_path / "script.txt"
    script.write_text("@kioku hi\n")

    result = subprocess.run(
        [sys.executable, "-m", "kioku.cli", "playground", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "LLM_BASE_URL": "http://127.0.0.1:8080/v1"},
    )

    # Then the first thing it says is why the real model is not used, and the scripted one answers
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert "LLM_BASE_URL is set but LLM_API_KEY is not" in first and "scripted" in first
    assert "kioku: [scripted]" in result.stdout


def test_a_failing_real_model_is_one_clear_line_not_log_records(tmp_path):
    # Given a model URL where nothing listens
    url = f"http://127.0.0.1:{closed_port()}/v1"

    result = run_playground(tmp_path, ["@kioku hi"], LLM_BASE_URL=url, LLM_API_KEY="key", LLM_MODEL="m")

    # Then the conversation shows the apology and one line saying what failed, no JSON
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.lstrip().startswith("{")], result.stdout
    (failure,) = [line for line in lines if "the model" in line and "unavailable" in line]
    assert "ConnectError" in failure and "after 4 attempts" in failure
    assert any(line.startswith("kioku: Sorry") for line in lines)


def test_the_playground_starts_like_a_server_that_just_added_kioku(tmp_path):
    # Given a fresh playground: no trigger words, as a real deployment's default
    result = run_playground(
        tmp_path,
        [
            "kioku, hi",
            "@kioku hi",
            '/server addressing trigger_words:"kioku, kio"',
            "kio, hi again",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    before, after = result.stdout.split("> /server addressing", 1)
    # Then only a mention reaches it until a manager sets trigger words, which then work
    assert before.count("kioku: [scripted]") == 1 and "kioku is not addressed" in before
    assert 'said: "kio, hi again"' in after


def test_options_are_written_as_discord_writes_them_and_a_wrong_one_changes_nothing(tmp_path):
    result = run_playground(
        tmp_path,
        [
            "/server stm parameters refresh_cadence:3",
            "/server memories moderation mode:approval",
            "/server stm parameters refresh_cadance:5",
            "/help stm",
        ],
    )
    out = result.stdout
    assert result.returncode == 1  # the misspelt option failed the script
    assert "Something went wrong" not in out
    assert "3 turns" in out.split("> /server memories moderation", 1)[0]
    assert "Saved: memory moderation is approval" in out
    assert "has no option 'refresh_cadance'" in out
    assert "the cadence (here 3)" in out.split("> /help stm", 1)[1]  # the misspelt 5 was not sent


def test_a_fact_about_oneself_is_a_personal_memory_and_forget_all_removes_it(tmp_path):
    result = run_playground(
        tmp_path,
        [
            "@kioku remember that my favourite colour is teal",
            "@kioku remember that the picnic is on saturday",
            "/personal memories list",
            "/server memories list",
            "/personal memories forget-all",
            ":click Forget everything",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    personal = out.split("> /personal memories list", 1)[1].split("> /server memories list", 1)[0]
    server = out.split("> /server memories list", 1)[1].split("> /personal memories forget-all", 1)[0]
    assert "favourite colour is teal" in personal and "picnic" not in personal
    assert "picnic" in server and "teal" not in server
    forgot = " ".join(out.split("> :click Forget everything", 1)[1].replace("┃", " ").split())
    assert "1 long-term memor" in forgot


def test_make_run_drives_the_settings_commands_and_their_forms(tmp_path):
    result = run_playground(
        tmp_path,
        [
            "/server stm parameters refresh_cadence:3",
            "/server stm prompt-edit",
            ':submit update_nudge="Refresh your notes on {category_labels}"',
            "/persona stm view",
            ":as bob",
            "/server stm parameters refresh_cadence=2",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "3 turns" in out
    assert "form: Short-term memory prompts" in out and "custom (" in out
    assert "No short-term memory here yet" in out
    assert "Manage Server" in out  # bob is no manager: refused, nothing saved


def test_make_run_reviews_a_members_server_memory_with_buttons(tmp_path):
    result = run_playground(
        tmp_path,
        [
            "/server memories moderation mode:approval",
            ":as bob",
            "@kioku remember that the book club meets on Fridays",
            "/server memories review",
            ":as alice",
            "/server memories review",
            ":click Approve",
            "/server memories list",
            "@kioku what do you remember?",
            ":context",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    saved, reviewed = out.split("> :as alice", 1)
    # bob is no manager: his server memory waits, and he may not review it
    memory_id = re.search(r"Server memory #([0-9]+) · awaits a manager's review", saved)[1]
    assert "Manage Server" in saved.split("> /server memories review", 1)[1]
    # alice sees it with its buttons, approves it, and it is listed as active and recalled
    review = reviewed.split("> :click Approve", 1)[0]
    assert f"#{memory_id} · pending review" in review and "the book club meets on Fridays" in review
    assert f"[1: Approve #{memory_id}]  [2: Reject #{memory_id}]" in review
    assert "by @Bobby in #general" in review  # mentions shown by name, as Discord shows them
    assert f"Approved server memory #{memory_id}" in reviewed
    listing = reviewed.split("> /server memories list", 1)[1].split("> @kioku", 1)[0]
    assert f"#{memory_id} · active" in listing and "the book club meets on Fridays" in listing
    context = reviewed.split("> :context", 1)[1]
    assert re.search(rf"\[#{memory_id}\] \d{{4}}-\d\d-\d\d: the book club meets on Fridays", context)


def test_in_approval_mode_the_owners_chat_memory_is_saved_at_once_and_a_members_waits(tmp_path):
    # Given approval mode, set by alice, who owns the server
    result = run_playground(
        tmp_path,
        [
            "/server memories moderation mode:approval",
            "@kioku remember that the picnic is on saturday",
            ":as bob",
            "@kioku remember that the book club meets on Fridays",
        ],
    )
    # Then a chat turn, whose member carries no permissions, knows she manages it from the guild's owner
    assert result.returncode == 0, result.stdout + result.stderr
    alices, bobs = result.stdout.split("> :as bob", 1)
    assert "Memory saved" in alices and "awaits a manager's review" not in alices
    assert "Memory awaiting review" in bobs


def test_make_run_shows_exports_and_forgets_a_person_with_a_confirmation(tmp_path):
    result = run_playground(
        tmp_path,
        [
            "@kioku my favourite colour is teal",
            ":memory",
            "/personal memories list",
            "/personal memories export",
            "/personal memories forget-all",
            ":click Forget everything",
            ":memory",
            "/personal memories forget-all",
            ":click Forget everything",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Nothing here." in out.split("> /personal memories list", 1)[1]
    export = out.split("> /personal memories export", 1)[1].split("> /personal memories forget-all", 1)[0]
    assert "attached file: kioku-export-400000000000000001.json" in export
    first, second = (
        " ".join(part.replace("┃", " ").split()) for part in out.split("> :click Forget everything")[1:3]
    )
    assert "and 1 of your messages in channels' short-term memory" in first
    memory = first.split("> :memory", 1)[1]
    assert (
        "Alice:" not in memory and "Kioku:" in memory
    )  # her line is gone from #general's row, kioku's stays
    assert "nothing left to forget" in second


def test_make_run_moves_the_clock_and_runs_the_janitor(tmp_path):
    # Given a conversation in #general, then a quarter of a year of silence
    result = run_playground(
        tmp_path,
        [
            "@kioku the picnic is on saturday",
            ":memory",
            ":janitor",
            ":wait 91d",
            ":janitor",
            ":memory",
            "@kioku hello again",
            ":context",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    before_wait, after_wait = result.stdout.split("> :wait 91d", 1)
    # Then the janitor keeps the fresh row, and purges it once it is idle past the 90-day retention
    assert "picnic" in before_wait.split("> :janitor", 1)[0]
    assert "0 deleted" in before_wait.split("> :janitor", 1)[1]
    assert "1 deleted" in after_wait and "(no short-term memory in this channel yet)" in after_wait
    # and the clock moved for the turn too: its model request is dated 91 days on
    moved = re.search(r"it is now (\d{4}-\d{2}-\d{2}) ", after_wait)
    assert moved is not None and f"Current time (UTC): {moved.group(1)}" in after_wait


def test_the_tour_in_docs_shows_cadence_time_and_privacy(tmp_path):
    tour = Path(__file__).resolve().parents[2] / "docs" / "playground-tour.txt"
    result = run_playground(tmp_path, tour.read_text().splitlines())
    assert result.returncode == 0, result.stdout + result.stderr
    sections = re.split(r"^> :context(?: full)?\n", result.stdout, flags=re.MULTILINE)
    # 0. Set up as a manager would: trigger words first (unaddressed before), then the persona's form
    setup = result.stdout.split("> /server stm parameters", 1)[0]
    assert "kioku is not addressed" in setup.split("> /server addressing", 1)[0]
    assert "Saved: how members call kioku" in setup and "form: The persona" in setup
    assert "Saved: the persona" in setup
    assert "the picnic club's cheerful note-taker" in sections[1]  # the model is sent the persona
    # 1. Cadence: no summary after two turns; turn three carries the reminder and gets one written
    assert "summary: (none yet)" in sections[0].split("> :memory", 1)[1]
    third, fourth = sections[1], sections[2]
    assert "[Short-term memory reminder]" in third
    summary = re.search(r"^summary: (.*)$", third.split("> :memory", 1)[1], re.MULTILINE).group(1)
    assert summary.startswith("Alice is talking about") and "picnic" in summary
    assert "Latest: Alice said “I bring sandwiches”." in summary
    # each message labelled with its kind and depth, every model round shown, the tools' schemas
    assert re.search(r"^\[\d+\] nudge · depth 2 · user$", third, re.MULTILINE)
    assert "── model request 2 of 2 of the last turn" in third
    assert re.search(r"^\[\d+\] tool call · assistant\n    update_short_term_memory\(", third, re.MULTILINE)
    assert '"name": "update_short_term_memory"' in third and "as in request 1" in third
    assert " …" in third  # long lines shortened
    # turn four (":context full"): the summary is in the context, the reminder is not, no line is cut
    assert re.search(r"^\[\d+\] short-term memory · depth \d+ · user$", fourth, re.MULTILINE)
    assert "[Short-term memory of this channel]" in fourth and "[Short-term memory reminder]" not in fourth
    assert " …\n" not in fourth.split("> :context", 1)[0]
    # 2. Time: a day later the summary is still recalled; only its placement moved, from near the
    # newest message (fresh) to the top (no longer fresh)
    fresh = re.search(r"^\[\d+\] short-term memory · depth (\d+)", fourth, re.MULTILINE)
    aged = re.search(r"^\[\d+\] short-term memory · depth (\d+)", sections[3], re.MULTILINE)
    assert fresh is not None and aged is not None and int(fresh.group(1)) <= 2 < int(aged.group(1))
    assert "Alice is talking about" in sections[3]
    # 3. Privacy: #secret's words reach #general only once #secret is public
    private, public, private_again = sections[-4], sections[-3], sections[-2].split("# 4. Personas", 1)[0]
    assert "okapi" not in private.split("> :public", 1)[0]
    assert "okapi" in public.split("> :private", 1)[0]
    assert "okapi" not in private_again  # the CHANNEL_UPDATE alone hides it at once
    assert "#secret: CHANNEL_UPDATE relayed" in result.stdout
    assert "#secret (private): CHANNEL_UPDATE relayed" in result.stdout
    # 4. Personas: Luna answers through the webhook under her name and avatar, recalls her own
    # memory and not kioku's, and each keeps its own row here
    personas = result.stdout.split("# 4. Personas", 1)[1]
    assert "Luna [persona, avatar https://example.com/luna.png]: [scripted]" in personas
    luna_context = sections[-1].split("> kioku, where is the telescope?", 1)[0]
    luna_recall = re.search(
        r"^\[\d+\] long-term memory.*?(?=^\[\d+\] )", luna_context, re.MULTILINE | re.DOTALL
    )
    assert luna_recall is not None and "telescope is kept in the shed" in luna_recall.group(0)
    assert "blankets" not in luna_recall.group(0)
    memory = personas.split("> :memory", 1)[1]
    assert "[Kioku, lineage 1]" in memory and re.search(r"^\[Luna, lineage \d+\]$", memory, re.MULTILINE)
    assert "Luna (alter persona) · trigger words: moon" in personas
    # 5. By hand: three memories saved, each answered with its id, Alice's for every persona
    by_hand = result.stdout.split("# 5. Writing memories by hand", 1)[1]
    assert by_hand.count("Saved as memory **#") == 3
    assert "(every persona's), for 365 days" in by_hand
    assert "I am allergic to wasps" in by_hand.split("> /personal memories list", 1)[1]


def test_make_run_waits_out_the_rate_window(tmp_path):
    # Given one turn a minute: three quick messages, then two minutes of quiet
    lines = ["@kioku one", "@kioku two", "@kioku three", ":wait 2m", "@kioku four"]
    result = run_playground(tmp_path, lines, TURN_RATE_LIMIT_PER_MINUTE="1")
    assert result.returncode == 0, result.stdout + result.stderr
    before, after = result.stdout.split("> :wait 2m", 1)
    # Then the quick ones run into the limit (a minute can turn over once among them, not twice)
    assert "faster than I can keep up" in before
    # and the moved clock opens a new window
    assert 'four"' in after and "faster than I can keep up" not in after


def test_at_a_terminal_the_console_has_line_editing_and_history():
    # Given the playground at a terminal (a pseudo-terminal)
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "kioku.cli", "playground"], stdin=child, stdout=child, stderr=child
    )
    os.close(child)
    seen = b""

    def read_until(marker: bytes, count: int = 1) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60
        while seen.count(marker) < count and time.monotonic() < deadline:
            if select.select([main], [], [], 1)[0]:
                seen += os.read(main, 65536)

    try:
        read_until(b"kioku> ")
        # When a command is typed, then called back with the up arrow, and a word edited with
        # backspace and the left arrow
        os.write(main, b"/help stm\r")
        read_until(b"kioku> ", 2)
        os.write(main, b"\x1b[A\r")
        read_until(b"kioku> ", 3)
        os.write(main, b":whre\x1b[D\x1b[De\r")
        read_until(b"kioku> ", 4)
        os.write(main, b":quit\r")
        process.wait(timeout=30)
    finally:
        process.kill()
        os.close(main)
    # Then the recalled line ran again and the edited one is :where
    text = seen.decode(errors="replace")
    assert text.count("Short-term memory: what you can customise") == 2, text
    assert "(you are Alice in #general)" in text, text


def test_context_prints_the_tools_schemas_once_and_again_on_context_tools(tmp_path):
    result = run_playground(
        tmp_path, ["@kioku hi", ":context", "@kioku hi again", ":context", ":context tools"]
    )

    assert result.returncode == 0, result.stdout + result.stderr
    first, second, again = re.split(r"^> :context(?: tools)?\n", result.stdout, flags=re.MULTILINE)[1:]
    schema = '"name": "create_long_term_memory"'
    assert first.count(schema) == 1
    assert schema not in second and "schemas as shown before (:context tools)" in second
    assert again.count(schema) == 1


def test_why_this_answer_is_offered_on_a_reply_and_shows_each_member_what_they_may_see(tmp_path):
    # Given Alice's memory about herself, and a reply that was shown it
    result = run_playground(
        tmp_path,
        [
            "@kioku remember that I like oolong tea",
            "@kioku what do I like?",
            ":why",
            ":as bob",
            ":why",
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    to_alice, to_bob = result.stdout.split("> :why")[1:3]
    # Then Alice reads her memory; Bob only that there was one about someone else
    assert "Why this answer?" in to_alice and "oolong" in to_alice
    assert "oolong" not in to_bob and "about someone else" in to_bob


def test_an_export_is_written_to_a_file_and_shown_and_memory_times_read_to_the_minute(tmp_path):
    # Given a turn in #general, then :memory and an export
    result = run_playground(
        tmp_path,
        ["@kioku hello there", ":memory", "/personal memories export", ":quit"],
        TMPDIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Then the row's time is to the minute, in UTC, with its age (no microseconds, no +00:00)
    (updated,) = re.findall(r"last updated: (.+)", result.stdout)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC \(just now\)", updated), updated
    # ...and the export is written where it says, and its JSON is shown
    (written,) = re.findall(r"\(written to (.+)\)", result.stdout)
    exported = json.loads(Path(written).read_text())
    assert str(tmp_path) in written and exported["your_lines_in_server_short_term_memory"]
    assert '"your_lines_in_server_short_term_memory": [' in result.stdout


def test_attach_reads_a_local_text_file_into_the_next_message(tmp_path):
    # Given a local notes file, attached with :attach (and another with --file, to the first message)
    notes = tmp_path / "notes.md"
    notes.write_text("# Shopping\n- green tea\n- rice\n")
    first = tmp_path / "todo.txt"
    first.write_text("water the plants\n")
    script = tmp_path / "script.txt"
    lines = [
        "@kioku here is my list",
        ":context full",
        f":attach {notes}",
        "@kioku and this?",
        ":context full",
    ]
    script.write_text("\n".join([*lines, f":attach {tmp_path / 'missing.txt'}"]) + "\n")

    result = subprocess.run(
        [sys.executable, "-m", "kioku.cli", "playground", "--file", str(first), "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )

    # Then each file was read into its message, as the model saw it; a missing file fails its line
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    first_context = out.split("> :context full", 2)[1]
    assert "[Text file: todo.txt]" in first_context and "water the plants" in first_context
    assert "(notes.md is attached to your next message)" in out
    second_context = out.split("> :context full", 2)[2]
    assert "[Text file: notes.md]" in second_context and "- green tea" in second_context
    assert "no file" in out.split(f"> :attach {tmp_path / 'missing.txt'}", 1)[1]
