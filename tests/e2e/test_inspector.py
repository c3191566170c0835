"""The web inspector's JSON API over HTTP: what the page shows and does, and what it refuses."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from datetime import datetime, timedelta

import httpx
import pytest

pytestmark = pytest.mark.e2e


def say(url: str, text: str, *, channel: str = "general", member: str = "alice") -> httpx.Response:
    return httpx.post(f"{url}/api/say", json={"channel": channel, "member": member, "text": text}, timeout=60)


def command(url: str, line: str, *, channel: str = "general", member: str = "alice") -> httpx.Response:
    return httpx.post(
        f"{url}/api/command", json={"channel": channel, "member": member, "line": line}, timeout=60
    )


def state(url: str, channel: str = "general") -> dict:
    response = httpx.get(f"{url}/api/state", params={"channel": channel}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def request_texts(turn: dict) -> str:
    return "\n".join(message["text"] for model_round in turn["rounds"] for message in model_round["messages"])


def test_a_reply_shows_with_the_labelled_model_request_that_made_it(inspector_url):
    # Given / When
    response = say(inspector_url, "@kioku I am planning a picnic on Saturday")

    # Then
    assert response.status_code == 200, response.text
    assert response.json()["ok"] is True
    shown = state(inspector_url)
    reply = next(message for message in shown["messages"] if message["bot"])
    turn = shown["turns"][str(reply["turn"])]
    assert reply["id"] in turn["reply_ids"]
    first = turn["rounds"][0]
    assert first["messages"][0]["kind"] == "system"
    dialogue = [message for message in first["messages"] if message["kind"] == "dialogue"]
    assert dialogue[-1]["depth"] == 0
    assert "picnic on Saturday" in dialogue[-1]["text"]
    assert "update_short_term_memory" in first["tool_names"]
    assert all(tool["schema"].startswith("{") for tool in first["tools"])
    assert (
        shown["stm"]["raw"][0]["text"] == "@Kioku I am planning a picnic on Saturday"
    )  # the mention, by name


def test_the_nudge_and_the_short_term_memory_block_are_labelled_when_due(inspector_url):
    # Given: a cadence of 2, so the third turn carries the reminder
    assert command(inspector_url, "/server stm parameters refresh_cadence:2").status_code == 200
    for text in ("the picnic is on saturday", "who brings drinks?", "I bring sandwiches", "and Bob lemonade"):
        assert say(inspector_url, f"@kioku {text}").status_code == 200

    # When
    turns = sorted(state(inspector_url)["turns"].values(), key=lambda turn: turn["number"])

    # Then
    def kinds(turn: dict) -> list[str]:
        return [message["kind"] for message in turn["rounds"][0]["messages"]]

    third, fourth = turns[2], turns[3]
    assert "nudge" in kinds(third) and "nudge" not in kinds(turns[1])
    assert len(third["rounds"]) == 2, "the scripted model answers the nudge with the tool, then replies"
    assert "short-term memory" in kinds(fourth) and "nudge" not in kinds(fourth)
    assert state(inspector_url)["stm"]["summary"]


def test_a_secret_said_in_private_secret_stays_out_of_generals_request(inspector_url):
    # Given
    assert say(inspector_url, "@kioku the launch code is swordfish-4512", channel="secret").status_code == 200
    assert "swordfish-4512" in str(state(inspector_url, "secret")["stm"])

    # When
    assert say(inspector_url, "@kioku what is new around here?").status_code == 200

    # Then
    general = state(inspector_url)
    assert general["turns"], "the turn in #general is shown"
    for turn in general["turns"].values():
        assert "swordfish" not in request_texts(turn)
    assert [c["private"] for c in general["channels"] if c["key"] == "secret"] == [True]


def test_making_general_private_shows_in_the_channel_list(inspector_url):
    # When
    response = command(inspector_url, ":private #general")

    # Then
    assert response.status_code == 200, response.text
    assert "CHANNEL_UPDATE relayed" in response.json()["output"]
    assert [c["private"] for c in state(inspector_url)["channels"] if c["key"] == "general"] == [True]


def test_wait_moves_the_clock_and_janitor_runs(inspector_url):
    # Given
    before = datetime.strptime(state(inspector_url)["clock"], "%Y-%m-%d %H:%M UTC")

    # When
    waited = command(inspector_url, ":wait 25h")
    janitor = command(inspector_url, ":janitor")

    # Then
    assert waited.status_code == 200, waited.text
    after = datetime.strptime(state(inspector_url)["clock"], "%Y-%m-%d %H:%M UTC")
    assert timedelta(hours=25) <= after - before < timedelta(hours=25, minutes=2)
    assert janitor.status_code == 200 and "janitor:" in janitor.json()["output"]


def test_slash_commands_answer_in_the_console_log(inspector_url):
    response = command(inspector_url, "/help stm")

    assert response.status_code == 200
    assert "Short-term memory: what you can customise" in response.json()["output"]
    assert state(inspector_url)["log"][-1]["line"] == "/help stm"


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/api/say", b"{not json", 400),
        ("/api/say", b"[1, 2]", 400),
        ("/api/say", b'{"channel": "nowhere", "member": "alice", "text": "hi"}', 400),
        ("/api/say", b'{"channel": "general", "member": "mallory", "text": "hi"}', 400),
        ("/api/say", b'{"channel": "general", "member": "alice", "text": ""}', 400),
        ("/api/say", b'{"channel": "dm-bob", "member": "alice", "text": "hi"}', 400),
        ("/api/command", b'{"channel": "general", "member": "alice", "line": ":quit"}', 400),
        ("/api/command", b'{"channel": "general", "member": "alice", "line": "hello"}', 400),
        ("/api/command", b'{"channel": "general", "member": "alice", "line": ":wait soon"}', 422),
        ("/api/nothing", b"{}", 404),
        ("/api/click", b'{"channel": "general", "member": "alice", "answer": 99, "button": "x"}', 400),
        ("/api/form", b'{"channel": "general", "member": "alice", "fields": {"name": "Mimi"}}', 400),
        ("/api/form", b'{"channel": "general", "member": "alice", "fields": ["name"]}', 400),
    ],
)
def test_bad_input_is_refused_with_a_message(inspector_url, path, body, status):
    response = httpx.post(inspector_url + path, content=body, headers={"content-type": "application/json"})

    assert response.status_code == status
    assert response.json().get("error") or response.json().get("output")


def test_unknown_channel_and_wrong_content_type_are_refused(inspector_url):
    assert httpx.get(f"{inspector_url}/api/state", params={"channel": "../etc"}).status_code == 400
    response = httpx.post(
        f"{inspector_url}/api/say", content=b"text=hi", headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415


def test_other_hosts_and_cross_origin_posts_are_refused(inspector_url):
    # DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1
    assert httpx.get(inspector_url + "/", headers={"Host": "evil.example"}).status_code == 403
    assert httpx.get(inspector_url + "/api/state", headers={"Host": "evil.example:80"}).status_code == 403
    assert httpx.get(inspector_url + "/", headers={"Host": "localhost"}).status_code == 200

    cross = httpx.post(
        inspector_url + "/api/command",
        json={"channel": "general", "member": "alice", "line": ":janitor"},
        headers={"Origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    same = httpx.post(
        inspector_url + "/api/command",
        json={"channel": "general", "member": "alice", "line": ":janitor"},
        headers={"Origin": inspector_url},
    )
    assert same.status_code == 200


@pytest.mark.parametrize(
    "origin",
    [
        "{url}.evil.example",  # the port runs on into another name: no port a parser can cast
        "http://127.0.0.1:99999",
        "http://127.0.0.1:-1",
        "http://[::1",
        "http://user@127.0.0.1:{port}",
        "http://127.0.0.1:{port}/path",
        "null",
    ],
)
def test_every_refused_origin_is_a_403_never_a_500(inspector_url, origin):
    port = inspector_url.rsplit(":", 1)[1]
    response = httpx.post(
        inspector_url + "/api/command",
        json={"channel": "general", "member": "alice", "line": ":janitor"},
        headers={"Origin": origin.format(url=inspector_url, port=port)},
    )
    assert response.status_code == 403, response.text


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}.evil.example", "127.0.0.1:99999", "localhost:{other}", "127.0.0.1:x", "[::1"]
)
def test_every_refused_host_is_a_403_never_a_500(inspector_url, host):
    port = int(inspector_url.rsplit(":", 1)[1])
    response = httpx.get(inspector_url + "/", headers={"Host": host.format(port=port, other=port + 1)})
    assert response.status_code == 403, response.text


def test_the_page_and_its_assets_are_served_locally(inspector_url):
    page = httpx.get(inspector_url + "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for asset in ("/app.js", "/app.css"):
        assert httpx.get(inspector_url + asset).status_code == 200
    assert "http" not in page.text.replace("http-equiv", "")


def test_kioku_playground_web_port_0_prints_its_url_and_serves():
    process = subprocess.Popen(
        [sys.executable, "-m", "kioku.cli", "playground", "--web", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=60)
        assert first.startswith("kioku inspector: http://127.0.0.1:")
        url = first.split()[2].rstrip("/")
        assert httpx.get(url + "/api/state", timeout=30).json()["channel"] == "general"
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0


def test_an_answer_is_its_askers_and_its_form_and_buttons_work_over_the_api(inspector_url):
    # Given: alice opens the persona form; only she sees it, in #general
    assert command(inspector_url, "/persona edit").status_code == 200
    assert state(inspector_url)["form"]["fields"][0] == {
        "id": "name",
        "label": "Name",
        "value": "Kioku",
        "placeholder": "",
        "long": False,
        "required": True,
        "max_length": state(inspector_url)["form"]["fields"][0]["max_length"],
    }
    assert (
        httpx.get(f"{inspector_url}/api/state", params={"channel": "general", "member": "bob"}).json()["form"]
        is None
    )
    refused = httpx.post(
        f"{inspector_url}/api/form",
        json={"channel": "general", "member": "bob", "fields": {"name": "Bobbot"}},
    )
    assert refused.status_code == 400

    # When: she sends it with a field the form does not have, then with its own
    wrong = httpx.post(
        f"{inspector_url}/api/form",
        json={"channel": "general", "member": "alice", "fields": {"colour": "red"}},
    )
    sent = httpx.post(
        f"{inspector_url}/api/form",
        json={"channel": "general", "member": "alice", "fields": {"name": "Mimi"}},
    )

    # Then: the wrong one changes nothing, the right one is answered inline, to her alone
    assert wrong.status_code == 422 and "has no field colour" in wrong.json()["output"]
    assert sent.status_code == 200, sent.text
    (answer,) = [m for m in state(inspector_url)["messages"] if m.get("answer")]
    assert answer["answer"]["ephemeral"] and answer["answer"]["by"] == "Alice"
    assert answer["embeds"][0]["title"] == "Saved: the persona"
    bobs = httpx.get(f"{inspector_url}/api/state", params={"channel": "general", "member": "bob"}).json()
    assert not any(m.get("answer") for m in bobs["messages"])


def test_a_personal_memory_is_labelled_in_scope_only_where_recall_would_show_it(inspector_url):
    # Given: alice tells kioku a fact about herself in #general
    assert say(inspector_url, "@kioku remember that my favourite colour is teal").status_code == 200

    # When: the memories as labelled in #general, in alice's DM and in bob's
    def alices_memory(channel: str, member: str) -> dict:
        shown = httpx.get(
            f"{inspector_url}/api/state", params={"channel": channel, "member": member}, timeout=30
        ).json()
        (memory,) = [each for each in shown["ltm"] if each["scope"] == "personal"]
        assert "teal" in memory["content"]
        return memory

    # Then: a turn of hers recalls it, and so does bob's in #general, where she wrote; a turn in
    # bob's DM (bob's alone) does not, whoever looks at it
    assert alices_memory("general", "alice")["in_scope"]
    assert alices_memory("general", "bob")["in_scope"]
    assert alices_memory("dm-alice", "alice")["in_scope"]
    assert not alices_memory("dm-bob", "bob")["in_scope"]
    assert not alices_memory("dm-bob", "alice")["in_scope"]


def test_why_this_answer_on_a_reply_answers_each_member_alone_with_what_they_may_see(inspector_url):
    # Given Alice's memory about herself, and a reply that was shown it
    say(inspector_url, "@kioku remember that I like oolong tea")
    say(inspector_url, "@kioku what do I like?")
    reply = [message for message in state(inspector_url)["messages"] if message["bot"]][-1]

    # When Alice, then Bob, use the command the page offers on that reply
    for member in ("alice", "bob"):
        response = command(inspector_url, f":why {reply['id']}", member=member)
        assert response.status_code == 200 and response.json()["ok"], response.text

    # Then each sees only their own answer: Alice her memory, Bob that one about someone else was used
    def why_answers(member: str) -> list[str]:
        shown = httpx.get(
            f"{inspector_url}/api/state", params={"channel": "general", "member": member}, timeout=30
        ).json()
        return [
            str(m["embeds"])
            for m in shown["messages"]
            if m.get("answer") and m["embeds"][0]["title"] == "Why this answer?"
        ]

    (to_alice,), (to_bob,) = why_answers("alice"), why_answers("bob")
    assert "oolong" in to_alice and "oolong" not in to_bob and "about someone else" in to_bob


def test_a_persona_s_message_shows_its_name_and_avatar_and_its_turn_is_badged_with_persona_and_lineage(
    inspector_url,
):
    # Given Luna, added with /persona add as in the console
    added = command(
        inspector_url,
        '/persona add name:Luna prompt:"You are {bot}." avatar_url:https://example.com/luna.png',
    )
    assert added.status_code == 200, added.text
    # When Luna is called, then the main persona
    assert say(inspector_url, "Luna, hello").status_code == 200
    assert say(inspector_url, "@kioku hello").status_code == 200
    # Then Luna's reply shows as a persona's, with her avatar, and each turn names who spoke
    shown = state(inspector_url)
    luna = next(m for m in shown["messages"] if m.get("persona"))
    main = next(m for m in shown["messages"] if m["bot"] and not m.get("persona") and m["turn"])
    assert (luna["author"], luna["avatar_url"]) == ("Luna", "https://example.com/luna.png")
    luna_turn, main_turn = shown["turns"][str(luna["turn"])], shown["turns"][str(main["turn"])]
    # ...its lineage a string: a snowflake as a JSON number loses its last digits in JavaScript
    assert luna_turn["persona"] == "Luna" and int(luna_turn["lineage"]) > 2**53
    assert (main_turn["persona"], main_turn["lineage"]) == ("Kioku", "1")


def test_why_this_answer_works_on_an_alter_personas_reply(inspector_url):
    # Given Luna, an alter persona, who answered through the channel's webhook
    added = command(inspector_url, '/persona add name:Luna prompt:"You are {bot}."')
    assert added.status_code == 200, added.text
    assert say(inspector_url, "Luna, remember that I like oolong tea").status_code == 200
    assert say(inspector_url, "Luna, what do I like?").status_code == 200
    luna = [m for m in state(inspector_url)["messages"] if m.get("persona") and m["turn"]][-1]
    # When Alice asks why on Luna's reply
    response = command(inspector_url, f":why {luna['id']}")
    # Then it is found by its message id, whoever posted it
    assert response.status_code == 200 and response.json()["ok"], response.text
    answers = [m for m in state(inspector_url)["messages"] if m.get("answer")]
    assert "What I was shown for this answer" in str(answers[-1]["embeds"])
    # ...headed as Discord heads a message command's answer, never with the message id
    assert answers[-1]["answer"]["used"] == "Why this answer?"


def test_when_only_an_alter_persona_spoke_her_memories_and_row_are_shown_as_hers(inspector_url):
    # Given Luna, with a lineage of her own, the only persona that took part in #general
    assert command(inspector_url, '/persona add name:Luna prompt:"You are {bot}."').status_code == 200
    assert say(inspector_url, "Luna, remember that I like oolong tea").status_code == 200
    shown = state(inspector_url)
    # Then the short-term row of #general is hers, named
    assert shown["stm"] is not None and shown["stm"]["persona"] == "Luna"
    assert "oolong" in str(shown["stm"]["raw"])
    # ...and the memory she saved is listed as Luna's, in scope where she would recall it
    (memory,) = [m for m in shown["ltm"] if "oolong" in m["content"]]
    assert memory["personas"] == ["Luna"] and memory["in_scope"]


def test_a_port_in_use_is_said_in_one_line():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "kioku.cli", "playground", "--web", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and f"127.0.0.1:{port}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_memory_edited_with_the_command_shows_changed_once_with_its_history(inspector_url):
    # Given: alice's memory about herself
    assert say(inspector_url, "@kioku remember that my favourite colour is amber").status_code == 200
    (memory,) = [m for m in state(inspector_url)["ltm"] if "amber" in m["content"]]
    assert memory["changes"] == 0 and memory["history"] == []

    # When: she corrects it with /personal memories edit, as the console takes it
    response = command(
        inspector_url, f"/personal memories edit memory_id:{memory['id']} content:'{{user}} loves crimson'"
    )

    # Then: she is answered, and the inspector shows it changed once, its old text in its history
    assert response.status_code == 200 and f"Edited memory #{memory['id']}" in response.json()["output"]
    (edited,) = [m for m in state(inspector_url)["ltm"] if m["id"] == memory["id"]]
    assert "crimson" in edited["content"] and edited["changes"] == 1
    (version,) = edited["history"]
    assert "amber" in version["content"] and version["changed_by"] == "Alice"
    history = command(inspector_url, f"/personal memories history memory_id:{memory['id']}")
    assert "amber" in history.json()["output"] and "crimson" in history.json()["output"]

    # When: she gives it five days without a new text; then the inspector shows until when, and the
    # version it keeps says it did not expire then
    command(inspector_url, f"/personal memories edit memory_id:{memory['id']} expires_in_days:5")
    (timed,) = [m for m in state(inspector_url)["ltm"] if m["id"] == memory["id"]]
    assert timed["expires_at"] is not None and timed["changes"] == 2 and "crimson" in timed["content"]
    assert [version["expires_at"] for version in timed["history"]] == [None, None]
