"""The turn's unit of work: the one writer of its outbox, in this attempt's hands and in the store.

Each step that makes something to post hands it here (``start``: a rate notice, the bot's notice
that a persona cannot speak, the model's answer; ``take_over``: an earlier attempt's); delivery
keeps it before the first post (``keep``) and notes each post before the next (``note``); the
tools' notices are kept as soon as they exist (``keep_notices``, ``write_announced``); the turn's
commit drops it (``commit``). Which attempt may post it is its claim (``Outbox.held_from``): one that
finds another's claim still held gives the turn back (``TurnClaimed``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NoReturn, TypeVar

from kioku.domain.conditions import StoreFailed
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.stm.capture import with_reply_id
from kioku.domain.turn import Claim, Outbox, TurnAlreadyRecorded, TurnClaimed, TurnKey, TurnOutcome
from kioku.services.stm import ShortTermMemoryTurn
from kioku.services.turn_ports import TurnStore

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass
class TurnUnitOfWork:
    """One attempt's outbox (``outbox``; ``kept``: in the store as it stands) and its claim."""

    turns: TurnStore
    key: TurnKey
    now: datetime
    claim: Claim
    outbox: Outbox | None = None
    kept: bool = False
    taking_from: str | None = None
    """The claim of an earlier attempt's outbox this one takes over (its first write replaces it)."""
    notices_kept: int = 0
    """How many of this attempt's notices are kept in the store."""

    @property
    def answered(self) -> bool:
        return self.outbox is not None and self.outbox.answered

    def start(self, outbox: Outbox) -> None:
        """This attempt's own outbox, kept when delivery begins."""
        self.outbox, self.kept = outbox, False

    def take_over(self, earlier: Outbox) -> Outbox:
        """An earlier attempt's outbox, taken over by this one; ``TurnClaimed`` (and the outbox
        marked as waited for) if that attempt may still be posting it."""
        if earlier.held_from(self.claim):  # its answer, or its notices only: the model may answer next
            assert earlier.claim is not None  # held
            self.give_back(earlier.claim)
        if earlier.claim is not None and earlier.claim != str(self.claim):
            self.taking_from = earlier.claim
        self.outbox, self.kept = replace(earlier, claim=str(self.claim)), True
        return self.outbox

    def give_back(self, claim: str) -> NoReturn:
        """Give the turn back to the attempt holding ``claim``: mark the outbox as waited for, so the
        message's next receive may take it over once that attempt is surely over (``TurnClaimed``)."""
        logger.warning("turn %s: another attempt holds its outbox; given back", self.key.turn_id)
        self.turns.wait_for(self.key, claim, str(self.claim))
        raise TurnClaimed(claim)

    def keep(self, webhook_ids: tuple[str, ...]) -> bool:
        """Keep the outbox, claimed by this attempt, before its first post (False: someone it answers
        or quotes forgot everything, nothing kept; ``TurnAlreadyRecorded``: a twin committed)."""
        assert self.outbox is not None  # started or taken over
        through = tuple(dict.fromkeys((*self.outbox.webhook_ids, *webhook_ids)))
        self.outbox = replace(self.outbox, claim=str(self.claim), webhook_ids=through)
        if not self.turns.keep(self.key, self.outbox, self.now, self.taking_from):
            return False
        self.kept, self.taking_from = True, None  # this claim replaced the one taken over
        return True

    def note(self, posted: Outbox) -> bool:
        """What delivery asks before each next post: the posts so far noted, while the outbox is
        kept and this attempt's (its first note takes it over from ``taking_from``)."""
        kept = self.turns.record_posted(self.key, posted, self.taking_from)
        self.taking_from = None
        return kept

    def posted(self, outbox: Outbox) -> None:
        """The outbox with what is posted of it so far (or found posted in the channel)."""
        self.outbox = outbox

    def keep_posted(self, outbox: Outbox) -> None:
        """Note what was posted before Discord refused the next post: the retry posts the rest."""
        try:
            self.turns.keep(self.key, outbox, self.now)
        except StoreFailed:
            logger.exception(
                "could not note what turn %s posted; the retry reads the channel", self.key.turn_id
            )

    def keep_notices(self, notices: tuple[dict[str, Any], ...], quoted: tuple[str, ...], own: int) -> None:
        """Keep the notices owed so far (``own`` of them this attempt's) as this attempt's claim: a
        twin holding the outbox (its answer maybe half posted) is left alone, and this attempt gives
        the turn back."""
        notes = Outbox(notices=notices, quoted=quoted, claim=str(self.claim))
        try:
            self.turns.keep(self.key, notes, self.now, self.taking_from)
        except TurnClaimed as exc:
            self.give_back(exc.claim)
        self.taking_from = None  # this attempt's claim replaced the one it took over
        self.notices_kept = own

    def write_announced(self, outbox: Outbox, write: Callable[[Sequence[Any]], _T], own: int) -> _T:
        """A memory's change and ``outbox``'s notices (``own`` of them this attempt's), in one
        transaction, the outbox this attempt's claim as the notices' keep: a twin's change is not
        made twice."""
        claimed = replace(outbox, claim=str(self.claim))
        try:
            written, kept = self.turns.write_announced(self.key, claimed, self.now, write, self.taking_from)
        except TurnClaimed as exc:
            self.give_back(exc.claim)
        if kept:
            self.taking_from = None  # this attempt's claim replaced the one it took over
            self.notices_kept = own
        return written

    def commit(self, outcome: TurnOutcome, delivered: Outbox | None, stm: ShortTermMemoryTurn | None) -> None:
        """The turn's one commit: capture what ``delivered`` posted (an apology too: the channel saw
        it) unless it says not, record the turn as done and drop its outbox, in one transaction. A
        twin's commit first: this attempt's outbox is dropped; its speaker's forget-all since: the
        turn is recorded, nothing captured."""
        capture = None
        if delivered is not None and delivered.capture and stm is not None:
            capture = stm.capture_of(with_reply_id(delivered.lines, outcome.reply_ids))
        try:
            self.turns.commit(self.key, outcome, self.now, capture)
        except TurnAlreadyRecorded:
            logger.info("turn %s was recorded by another attempt meanwhile", self.key.turn_id)
            if delivered is not None:
                self.drop(delivered)
        except SpeakerForgotten:
            logger.warning(
                "turn %s is dropped, not captured: its speaker asked to forget everything since",
                self.key.turn_id,
            )
            with suppress(TurnAlreadyRecorded):
                self.turns.commit(self.key, outcome, self.now, None)

    def drop(self, outbox: Outbox) -> None:
        """Drop what this attempt kept after a twin worker committed the turn (its commit deleted
        the outbox before this one's keep landed): the user's words must not wait 16 days there."""
        try:
            self.turns.drop(self.key, outbox)
        except StoreFailed:
            logger.exception("turn %s: the outbox of a twin attempt stays until it expires", self.key.turn_id)
