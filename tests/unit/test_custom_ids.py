"""Button and form ids: what kioku writes it reads back as it was; anything else reads as nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kioku.services.commands as commands
from kioku.services.commands.custom_ids import MAX_CUSTOM_ID_CHARS, CustomId, Field, digits, number
from kioku.services.commands.registry import by_name

COMMANDS = tuple(by_name().values())

KINDS = [kind for command in COMMANDS for kind in (*command.buttons, *command.forms)]
BUTTONS = [kind for command in COMMANDS for kind in command.buttons]
FORMS = [kind for command in COMMANDS for kind in command.forms]


def field_text(field: Field) -> st.SearchStrategy[str]:
    return st.from_regex(field.pattern, fullmatch=True, alphabet=st.characters(codec="ascii"))


@st.composite
def encoded(draw) -> tuple[CustomId, tuple, str]:
    """A kind of id kioku writes, values for its fields, and the id carrying them."""
    kind = draw(st.sampled_from(KINDS))
    values = tuple(field.parse(draw(field_text(field))) for field in kind.fields)
    return kind, values, kind.encode(*values)


@given(encoded())
def test_every_id_kioku_writes_reads_back_as_it_was_and_as_one_kind_only(case):
    kind, values, custom_id = case
    assert len(custom_id) <= MAX_CUSTOM_ID_CHARS
    assert kind.decode(custom_id) == values
    among = BUTTONS if kind in BUTTONS else FORMS
    assert [other for other in among if other.decode(custom_id) is not None] == [kind]


@given(
    st.text(max_size=150)
    | st.builds(lambda kind, tail: f"{kind.command}:{tail}", st.sampled_from(KINDS), st.text())
)
def test_whatever_decodes_is_an_id_kioku_would_write_itself(forged):
    for kind in KINDS:
        values = kind.decode(forged)
        if values is not None:
            assert kind.encode(*values) == forged


@pytest.mark.parametrize(
    "forged",
    [
        "server:memories:page:01",
        "server:memories:page:-1",
        "server:memories:page:١",  # an Arabic-Indic digit one
        "server:memories:approve:12345:0123456789AB",
        "server:memories:approve:12345:0123456789ab:extra",
        "personal:list:400000000000000001",
        "personal:forget-all:maybe:400000000000000001",
        "persona:edit:" + "9" * 13,
        "server:prompt-edit:" + "1" * (MAX_CUSTOM_ID_CHARS + 1),
        "",
    ],
)
def test_a_forged_id_reads_as_nothing(forged):
    assert [kind for kind in KINDS if kind.decode(forged) is not None] == []


def test_an_id_out_of_shape_or_past_discords_limit_is_never_written():
    page = CustomId("personal", "list", digits("user", 20), number("page", 6))
    with pytest.raises(ValueError, match="shape"):
        page.encode("400000000000000001", -1)
    with pytest.raises(ValueError, match="fields"):
        page.encode("400000000000000001")
    with pytest.raises(ValueError, match="Discord takes 100"):
        CustomId("server", digits("a", 60), digits("b", 60))
    with pytest.raises(ValueError, match="without"):
        CustomId("server", "memories:page")


def joined_like_an_id(node: ast.JoinedStr) -> bool:
    """An f-string that starts with a command's name and ``:``, or joins two values with ``:``."""
    pieces = node.values
    starts = isinstance(pieces[0], ast.Constant) and str(pieces[0].value).startswith(
        tuple(f"{command.name}:" for command in COMMANDS)
    )
    joins = any(
        isinstance(before, ast.FormattedValue)
        and isinstance(colon, ast.Constant)
        and colon.value == ":"
        and isinstance(after, ast.FormattedValue)
        for before, colon, after in zip(pieces, pieces[1:], pieces[2:], strict=False)
    )
    return starts or joins


def test_ids_are_written_and_read_through_the_codec_alone():
    # Given the commands' modules
    by_hand = {}
    for path in sorted(Path(commands.__file__).parent.glob("*.py")):
        if path.name == "custom_ids.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        # When they are searched for ids built or parsed by hand (a pattern, a split, an f-string)
        found = [
            ast.unparse(node)
            for node in ast.walk(tree)
            if (isinstance(node, ast.Attribute) and node.attr in {"compile", "fullmatch", "rsplit"})
            or (isinstance(node, ast.JoinedStr) and joined_like_an_id(node))
        ]
        if found:
            by_hand[path.name] = found
    # Then there are none
    assert by_hand == {}
