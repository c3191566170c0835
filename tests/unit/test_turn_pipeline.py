"""The turn as a path of values (issue 41, item 1): the steps hand each other frozen values, and the
outbox has one writer, the turn's unit of work, in the attempt's hands and in the store."""

from __future__ import annotations

import ast
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pytest

from kioku.domain.turn import Claim, Outbox, TurnClaimed, TurnKey
from kioku.services.turn_conversation import Prompt
from kioku.services.turn_state import Heard, Loaded, TurnAttempt, Voiced
from kioku.services.turn_unit_of_work import TurnUnitOfWork

SERVICES: Final = Path(__file__).resolve().parents[2] / "layers" / "kioku" / "kioku" / "services"
OUTBOX_WRITES: Final = frozenset({"keep", "record_posted", "write_announced", "wait_for", "drop", "commit"})
NOW: Final = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
KEY: Final = TurnKey("message", "300000000000000001", "100000000000000001", NOW)


def _outbox_writes(path: Path) -> list[str]:
    """Calls of the turn store's outbox writes (``turns.keep(…)``, ``self.turns.commit(…)``) in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if name == "turns" and node.func.attr in OUTBOX_WRITES:
            found.append(f"{path.name}:{node.lineno} turns.{node.func.attr}")
    return found


def test_only_the_turns_unit_of_work_writes_its_outbox_to_the_store():
    # Given every service module
    writes = [write for path in sorted(SERVICES.rglob("*.py")) for write in _outbox_writes(path)]
    # Then the outbox writes are all the unit of work's
    assert writes and all(write.startswith("turn_unit_of_work.py:") for write in writes), writes


@pytest.mark.parametrize("value", [TurnAttempt, Heard, Voiced, Loaded, Prompt])
def test_the_values_the_steps_hand_each_other_are_frozen(value: type):
    assert dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen  # type: ignore[attr-defined]


class _Turns:
    """The turn store's outbox writes, noted."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def wait_for(self, key: TurnKey, claim: str, waiter: str) -> None:
        self.calls.append(("wait_for", (claim, waiter)))

    def keep(self, key: TurnKey, outbox: Outbox, now: datetime, taking_from: str | None = None) -> bool:
        self.calls.append(("keep", (outbox.claim, taking_from)))
        return True


def _work(turns: _Turns, receive: int) -> TurnUnitOfWork:
    return TurnUnitOfWork(turns, KEY, NOW, Claim("m-1", receive, "mine"))  # type: ignore[arg-type]


def test_an_outbox_another_live_attempt_holds_is_given_back_untouched():
    # Given an answered outbox held by another attempt of the same receive
    turns = _Turns()
    work = _work(turns, receive=1)
    theirs = Outbox(reply="hi", chunks=("hi",), claim=str(Claim("m-1", 1, "theirs")))
    # When this attempt would take it over
    with pytest.raises(TurnClaimed):
        work.take_over(theirs)
    # Then it marks it waited for, takes nothing, and keeps nothing
    assert turns.calls == [("wait_for", (theirs.claim, str(work.claim)))]
    assert work.outbox is None and not work.answered


def test_an_outbox_taken_over_on_a_later_receive_is_kept_under_this_claim_replacing_the_old():
    # Given an outbox an attempt of the message's first receive left, this one the second
    turns = _Turns()
    work = _work(turns, receive=2)
    earlier = Outbox(notices=({"title": "Memory saved"},), claim=str(Claim("m-1", 1, "theirs")))
    # When it takes it over, answers, and keeps the answer
    work.take_over(earlier)
    work.start(Outbox(reply="hi", chunks=("hi",), notices=earlier.notices))
    assert work.keep(())
    # Then the keep names this attempt's claim and the one it replaces, once
    assert turns.calls == [("keep", (str(work.claim), earlier.claim))]
    assert work.kept and work.taking_from is None and work.answered
