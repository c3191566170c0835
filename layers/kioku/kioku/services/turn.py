"""One chat turn, from a queued job to a posted reply, as named steps, each taking what the one
before it made and returning what it made:

    gate (the author's rate: a notice, or nothing) → read Discord (``Heard``) → read memory (and
    the turn's own record and outbox: a turn already done ends here; ``Loaded``, with the turn's
    ``TurnContext``) → find the voice (an alter persona's webhook) → recall (a ``Recall``) →
    assemble (a ``Prompt``) → converse (the answer's ``Outbox``) → deliver (a ``TurnEnd``) →
    commit (capture, record as done, drop the outbox).

The outbox has one writer, the turn's unit of work (``turn_unit_of_work``): an answer is kept there
before anything is posted; a redelivered turn that finds an answered outbox skips to delivery and
never asks the model again. A model that fails gets the user a short apology, still captured and
counted, as the channel saw it. Discord refusing a post raises, so the queue retries the turn; a
store failing the commit raises too, the outbox still there for the retry.

The steps live here; what they lean on lives by job: ``turn_reading`` (Discord's channel, history,
names, dialogue), ``persona_voice`` (how an alter persona hears and speaks), ``turn_conversation``
(the model's messages, its requests and tools), ``turn_delivery`` (posting an outbox),
``turn_state`` (the values the steps hand each other, and the record).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final
from uuid import uuid4

from kioku import clock as kioku_clock
from kioku.adapters.llm.base import ChatModel
from kioku.config import Settings
from kioku.discord.models import Message
from kioku.domain.attachment_text import AttachmentFiles
from kioku.domain.bursts import up_to
from kioku.domain.conditions import DiscordRefused, StoreFailed
from kioku.domain.forgetting import forgotten_since
from kioku.domain.ltm.memory import MemoryStoreFailed
from kioku.domain.ltm.ports import Embedder, MemoryStore
from kioku.domain.ltm.recall import Recall, people_taking_part, recall_query
from kioku.domain.privacy import ChannelDescription
from kioku.domain.replies import at_most, split_reply
from kioku.domain.stm.entries import StmLimits
from kioku.domain.text import readable_mentions
from kioku.domain.turn import (
    BotIdentity,
    Claim,
    LlmUnavailable,
    Outbox,
    PersonaRemoved,
    TurnAlreadyRecorded,
    TurnEnd,
    TurnOutcome,
)
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.domain.turn_read import TurnRead
from kioku.services import ltm
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.persona_voice import PersonaWebhooks, TurnVoice, no_webhook_notice, webhook_channel
from kioku.services.stm import PersonaGuesses, ShortTermMemoryTurn, turn_memory_query
from kioku.services.turn_bursts import covered, later_of, later_records
from kioku.services.turn_context import context_of
from kioku.services.turn_conversation import Conversation, Prompt
from kioku.services.turn_delivery import (
    Delivery,
    DeliveryInterrupted,
    DeliveryVoiceLost,
    DeliveryWithdrawn,
    Responder,
    responder_for,
)
from kioku.services.turn_ports import GuildLookup, ShortTermMemoryWrites, TurnDiscord, TurnRates, TurnStore
from kioku.services.turn_reading import ChannelReader, author_of, bot_username
from kioku.services.turn_state import Heard, Loaded, TurnAttempt, TurnRecord, key_of
from kioku.services.turn_unit_of_work import TurnUnitOfWork

__all__ = ["APOLOGY", "EMPTY_REPLY", "RATE_NOTICE", "TurnRecord", "TurnService"]

logger = logging.getLogger(__name__)

DEFAULT_TURN_SECONDS: Final = 120.0
APOLOGY: Final = "Sorry, I couldn't think of an answer just now. Please try again in a little while."
EMPTY_REPLY: Final = "…"
PERMANENT_REFUSALS: Final = frozenset({403, 404})
RATE_NOTICE: Final = "You're talking to me faster than I can keep up. Give me a minute, then try again."


@dataclass
class TurnService:
    """A turn's collaborators are its ports (``turn_ports``, ``ChatModel``, ``MemoryStore``,
    ``Embedder``): the composition root hands it the adapters, the unit tests in-memory fakes."""

    settings: Settings
    discord: TurnDiscord
    model: ChatModel
    stm_store: ShortTermMemoryWrites
    ltm_store: MemoryStore
    turns: TurnStore
    directory: GuildLookup
    clock: Callable[[], datetime] = kioku_clock.now
    rates: TurnRates | None = None
    """Turns per person per minute (``TURN_RATE_LIMIT_PER_MINUTE``); None counts nothing."""
    embedder: Embedder | None = None
    """``EMBEDDINGS_MODEL``'s endpoint; None ranks memories by their words alone."""
    personas: PersonaGuesses = field(default_factory=PersonaGuesses)
    """The persona last seen on each server, the next turn's guess: as long-lived as the service."""
    webhooks: PersonaWebhooks | None = None
    """The channel webhooks alter personas speak through; None: only the main persona speaks."""
    files: AttachmentFiles | None = None  # Discord's CDN, where text files are read; None reads none

    def run(
        self,
        job: TurnJob,
        *,
        redelivered: bool = False,
        time_left: Callable[[], float] = lambda: DEFAULT_TURN_SECONDS,
        delivery: tuple[str, int] | None = None,
    ) -> TurnRecord:
        """Answer ``job``. ``redelivered``: SQS has handed it out before, so an earlier attempt
        counted it against the rate and may have left an outbox. ``time_left``: seconds until the
        turn must be done (Lambda's remaining time); model calls stop short of it, so a slow model
        still ends in an apology. ``delivery``: the SQS message and receive count its claim names;
        ``TurnClaimed`` if another attempt holds the outbox (``TurnUnitOfWork.take_over``)."""
        message_id, receive = delivery or (None, 2 if redelivered else 1)
        attempt = TurnAttempt(
            job=job,
            key=key_of(job),
            now=self.clock(),
            time_left=time_left,
            guessed=self._voice().speaking(job),
            claim=Claim(message_id, receive, uuid4().hex),
        )
        work = TurnUnitOfWork(self.turns, attempt.key, attempt.now, attempt.claim)
        end, stm = self._take(attempt, work, redelivered)
        self._end(attempt, work, end, stm)
        return attempt.record

    def _take(
        self, attempt: TurnAttempt, work: TurnUnitOfWork, redelivered: bool
    ) -> tuple[TurnEnd, ShortTermMemoryTurn | None]:
        """The steps, one way through, up to how the turn ends (and the short-term memory its
        commit captures into, once read): a rate notice goes straight to delivery; any step may end
        the turn early."""
        gated = self._gate(attempt, redelivered)
        if isinstance(gated, TurnEnd):
            return gated, None
        if gated is not None:  # the rate notice: the turn reads nothing
            work.start(gated)
            return self._deliver(attempt, work, None), None
        heard = self._read_discord(attempt)
        if isinstance(heard, TurnEnd):
            return heard, None
        loaded = self._read_memory(attempt, heard)
        if isinstance(loaded, TurnEnd):
            return loaded, None
        return self._answer(attempt, work, loaded), loaded.stm

    def _answer(self, attempt: TurnAttempt, work: TurnUnitOfWork, loaded: Loaded) -> TurnEnd:
        """From the loaded turn to its delivery: the voice it speaks in, the outbox an earlier attempt
        left (its answer goes straight to delivery), else recall, the prompt and the model's answer."""
        voice = self._find_voice(attempt, loaded)
        if loaded.read.outbox is not None:
            self._resume(attempt, work, loaded.read.outbox)
        elif isinstance(voice, Outbox):  # the persona cannot speak here: the bot says so instead
            work.start(voice)
        if not work.answered:
            embeddings = TurnEmbeddings(self.embedder) if self.embedder is not None else None
            recalled = self._recall(attempt, loaded, embeddings)
            conversation = Conversation(
                self.settings,
                self.model,
                self.discord,
                self.directory,
                self.ltm_store,
                work,
                attempt,
                loaded,
                recalled,
                embeddings,
            )
            answer = self._converse(attempt, conversation, self._assemble(attempt, conversation), work.outbox)
            if isinstance(answer, TurnEnd):
                return answer
            work.start(answer)
        return self._deliver(attempt, work, None if isinstance(voice, Outbox) else voice)

    # -- the steps ------------------------------------------------------------------------------

    def _gate(self, attempt: TurnAttempt, redelivered: bool) -> TurnEnd | Outbox | None:
        """Count the turn against the minute its author sent it in, once ever (a redelivery, a
        duplicate, a redrive get the number its first attempt got). The first turn over the limit
        gets one short notice, posted and recorded like an answer; later ones end in silence,
        unrecorded (a ``/chat`` still gets the notice: its answer would otherwise stay
        "thinking…"). A turn already done ends here before any notice, and one counted before (a
        burst's message a turn covered, a redrive) before it reads anything of Discord."""
        job, key = attempt.job, attempt.key
        if redelivered or self.rates is None:
            return None
        limit = self.settings.TURN_RATE_LIMIT_PER_MINUTE
        try:
            taken = self.rates.take(key.author_id, job.turn_id, key.sent_at, limit)
        except StoreFailed:
            logger.warning("the turn rate could not be counted; the turn goes on")
            return None
        if taken.number is not None and taken.number <= limit:
            return TurnEnd.ALREADY_DONE if taken.before and self._done_already(attempt) else None
        if self._done_already(attempt):
            return TurnEnd.ALREADY_DONE
        logger.info("turn %s is over its author's rate of %d a minute", job.turn_id, limit)
        attempt.record.rate_limited = True
        if taken.number is None and job.source is not TurnSource.SLASH_COMMAND:
            return TurnEnd.SILENCED
        return Outbox(reply=RATE_NOTICE, chunks=(RATE_NOTICE,), capture=False)

    def _done_already(self, attempt: TurnAttempt) -> bool:
        """Whether the turn is recorded as done (a copy back after SQS's deduplication window): read
        on its own only where the turn would not reach its first read (``_read_memory``)."""
        done = self.turns.done(attempt.key)
        if done is None:
            return False
        logger.info("turn %s was already completed", attempt.job.turn_id)
        attempt.record.reply_ids = list(done.reply_ids)
        return True

    def _read_discord(self, attempt: TurnAttempt) -> Heard | TurnEnd:
        """The channel (its privacy, read on every turn: a channel can turn private at any moment)
        and the conversation as it stood when the turn's message was sent."""
        job, reader = attempt.job, self._reader()
        reader.typing(job.channel_id)
        try:
            channel = reader.describe_channel(job)
            messages = reader.history(job, attempt.now)
        except DiscordRefused as exc:
            if exc.status not in PERMANENT_REFUSALS:
                raise
            # The bot lost access to the channel, or it is gone: no retry can answer it.
            logger.warning("turn %s ends unanswered: Discord refused its channel (%s)", job.turn_id, exc)
            return TurnEnd.UNANSWERABLE
        return self._hear(attempt, channel, messages)

    def _hear(self, attempt: TurnAttempt, channel: ChannelDescription, messages: list[Message]) -> Heard:
        """The conversation ``messages`` (newest first) as the persona speaking hears it."""
        job, reader = attempt.job, self._reader()
        # an alter persona is a voice of its own: its id, its name, the others' messages as other bots'
        guessed = attempt.guessed
        alter = guessed if guessed.alter else None
        bot = BotIdentity(
            user_id=alter.persona_id if alter else self.settings.DISCORD_APPLICATION_ID,
            username=alter.name if alter else bot_username(messages, self.settings),
        )
        voice = self._voice()
        voiced_by = voice.known_webhook_id(guessed, job, channel)
        voiced = voice.heard_by(guessed, job, messages, voiced_by, bot.user_id)
        # The persona's name heads the bot's own messages, as the system prompt calls it: the name
        # this container last saw; a wrong guess (the persona was renamed) reads the history again.
        # Other channels are named only once the server's privacy settings are read, with memory.
        names = reader.mention_names(job, channel, voiced.history, bot.user_id, guessed.name, None)
        dialogue = reader.dialogue(voiced.history, bot.user_id, names, guessed.name)
        return Heard(channel, messages, voiced, bot, names, dialogue)

    def _read_memory(self, attempt: TurnAttempt, heard: Heard) -> Loaded | TurnEnd:
        """One BatchGetItem for everything with a known key (configuration, profile, short-term
        rows, long-term memory books, this turn's record and outbox), one Query for other channels.
        A turn already done ends here, and one whose outbox its author's forget-all withdrew."""
        job, guessed = attempt.job, attempt.guessed
        limits = StmLimits.from_settings(self.settings)
        user = author_of(job, heard.voiced.participants)
        later = later_of(job, heard.messages)
        read = self.turns.read(
            attempt.key,
            turn_memory_query(
                guild_id=job.guild_id,
                channel_id=job.channel_id,
                user_id=user.user_id,
                parent_channel_id=heard.channel.parent_channel_id,
                now=attempt.now,
                limits=limits,
                guessed=guessed,
                speaking=job.persona.persona_id if job.persona else None,
            ),
            recall_lineage=guessed.lineage_id,
            recall_people=self._recall_people(attempt, heard, later),
            webhook_of=(job.guild_id, webhook_channel(job, heard.channel))
            if job.persona and job.guild_id
            else None,
            later=later_records(job, later),
        )
        self.personas.saw(job.guild_id, read.memory.config.main_persona)
        if read.memory.persona_gone:
            logger.info("turn %s is not answered: its persona was removed", job.turn_id)
            self._voice().say_removed(job, self.discord)  # a /chat's "thinking…" must not stay
            return TurnEnd.PERSONA_REMOVED
        if read.done is not None:
            logger.info("turn %s was already completed", job.turn_id)
            attempt.record.reply_ids = list(read.done.reply_ids)
            return TurnEnd.ALREADY_DONE
        if forgotten_since(read.author_forgotten_at, attempt.key.sent_at):
            # forget-all came after the message: nothing of the turn may be kept, so nothing is asked
            logger.warning("turn %s is withdrawn: its author forgot everything since", job.turn_id)
            return TurnEnd.WITHDRAWN
        persona = read.memory.config.persona
        attempt.record.persona, attempt.record.lineage = persona.name, persona.lineage_id
        heard, read, answers = self._burst(attempt, heard, read, later)
        turn, dialogue = context_of(
            self.settings, self._reader(), self._voice(), attempt, heard, read, answers
        )
        stm = ShortTermMemoryTurn(
            self.stm_store, turn, read.memory.state, limits, heard.channel.name, described_at=attempt.now
        )
        return Loaded(read, turn, heard.channel, dialogue, stm, answers)

    def _taking_part(self, job: TurnJob, heard: Heard) -> tuple[str, ...]:
        """Whose memories the turn may recall: the people taking part in what it heard."""
        user = author_of(job, heard.voiced.participants)
        voiced, dm = heard.voiced, job.guild_id is None
        people = people_taking_part(
            user, voiced.participants, heard.dialogue.author_ids, heard.bot.user_id, dm
        )
        return tuple(person.user_id for person in people)

    def _recall_people(self, attempt: TurnAttempt, heard: Heard, later: list[Message]) -> tuple[str, ...]:
        """Whose memory books the read fetches: the people taking part in what the turn heard; with
        later messages, also in the dialogue cut at its own (how far it is cut is decided after the
        read: the later messages shown may push earlier speakers out of the dialogue, or not)."""
        people = self._taking_part(attempt.job, heard)
        if not later:
            return people
        own_only = self._hear(attempt, heard.channel, up_to(heard.messages, attempt.job.turn_id))
        return tuple(dict.fromkeys((*people, *self._taking_part(attempt.job, own_only))))

    def _burst(
        self, attempt: TurnAttempt, heard: Heard, read: TurnRead, later: list[Message]
    ) -> tuple[Heard, TurnRead, tuple[Message, ...]]:
        """The later messages the turn answers too (``turn_bursts``), and the conversation cut after
        the newest of them (after its own when none): what was said since is the next turn's."""
        if not later:
            return heard, read, ()
        answers = covered(self.settings, self.rates, attempt.job, later, read)
        newest = answers[-1].id if answers else attempt.job.turn_id
        heard = self._hear(attempt, heard.channel, up_to(heard.messages, newest))
        kept = set(self._taking_part(attempt.job, heard))
        read = replace(read, recall_people=tuple(p for p in read.recall_people if p in kept))
        if answers:
            logger.info("turn %s answers %d later message(s) too", attempt.job.turn_id, len(answers))
        return heard, read, answers

    def _find_voice(self, attempt: TurnAttempt, loaded: Loaded) -> Responder | Outbox | None:
        """Where an alter persona's answer goes: its channel's webhook (created now, the channel's
        first persona turn), or the bot's notice that it cannot speak there; None: as the bot."""
        if attempt.job.persona is None:
            return None
        return self._voice().speak_as_persona(attempt.job, loaded.channel, loaded.read)

    def _resume(self, attempt: TurnAttempt, work: TurnUnitOfWork, earlier: Outbox) -> None:
        """Take up the outbox an earlier attempt left (``TurnClaimed`` if it may still be posting)."""
        outbox = work.take_over(earlier)
        if outbox.answered:
            logger.warning(
                "turn %s: delivering the answer an earlier attempt recorded (%d of %d chunks posted)",
                attempt.job.turn_id,
                len(outbox.reply_ids),
                len(outbox.chunks),
            )
            attempt.record.resumed, attempt.record.apologised = True, outbox.apologised

    def _recall(self, attempt: TurnAttempt, loaded: Loaded, embeddings: TurnEmbeddings | None) -> Recall:
        """Long-term recall from the books read with the turn; a wrong lineage guess costs one read."""
        turn = loaded.turn
        try:
            memories = self.turns.recall(
                loaded.read,
                turn.config.persona.lineage_id,
                place=turn.place,
                policy=turn.config.privacy,
                now=turn.now,
            )
        except MemoryStoreFailed:
            logger.exception("long-term memory recall failed; the turn goes on without it")
            return Recall()
        query = recall_query(
            turn, readable_mentions(attempt.job.content, turn.mention_names), loaded.dialogue.items
        )
        return ltm.recall_context(
            turn, memories, query=query, budget=self.settings.LTM_RECALL_BUDGET_CHARS, embeddings=embeddings
        )

    def _assemble(self, attempt: TurnAttempt, conversation: Conversation) -> Prompt:
        """The model's messages and the tools offered (``Conversation.assemble``)."""
        prompt = conversation.assemble()
        attempt.record.context_kinds = list(prompt.kinds)
        return prompt

    def _converse(
        self, attempt: TurnAttempt, conversation: Conversation, prompt: Prompt, earlier: Outbox | None
    ) -> Outbox | TurnEnd:
        """Ask the model, running its tools for a few rounds: the answer's outbox, owing the notices
        of ``earlier`` (an attempt's before) and of this one's tools."""
        job, record = attempt.job, attempt.record
        owed = earlier.notices if earlier is not None else ()
        try:
            reply = conversation.ask(prompt, owed)
            chunks = at_most(split_reply(reply), self.settings.MAX_REPLY_MESSAGES) or [EMPTY_REPLY]
        except LlmUnavailable as exc:
            logger.warning("the model failed for turn %s: %s", job.turn_id, exc)
            record.apologised = True
            reply, chunks = APOLOGY, [APOLOGY]
        except TurnAlreadyRecorded:
            return TurnEnd.ALREADY_DONE  # a twin committed it before this attempt kept its notices
        except PersonaRemoved:
            return TurnEnd.PERSONA_REMOVED  # removed since the read: its notices go with it
        return conversation.outbox(reply, tuple(chunks), owed)

    def _deliver(self, attempt: TurnAttempt, work: TurnUnitOfWork, responder: Responder | None) -> TurnEnd:
        """Keep the outbox, then post what it has not posted: it is in DynamoDB before the first post,
        claimed by this attempt, and what it posted is noted before each next post."""
        job, record = attempt.job, attempt.record
        reply_to = work.outbox.reply_to if work.outbox is not None else None  # a burst: its newest
        responder = responder or responder_for(
            job, self.discord, self.settings.DISCORD_APPLICATION_ID, reply_to
        )
        delivery = Delivery(self.discord, job, responder)
        just_kept = not work.kept
        if just_kept:
            try:
                kept = work.keep(responder.webhook_ids)
            except TurnAlreadyRecorded:
                return TurnEnd.ALREADY_DONE  # a twin committed it meanwhile
            except PersonaRemoved:
                return TurnEnd.PERSONA_REMOVED  # removed since the read: nothing in its voice
            if not kept:
                logger.warning(
                    "turn %s posts nothing: someone it answers or quotes forgot everything", job.turn_id
                )
                return TurnEnd.WITHDRAWN
        outbox = work.outbox
        assert outbox is not None  # a rate notice, an earlier attempt's, or this one's answer
        if not just_kept:  # an earlier attempt's: what it posted may be in the channel, unrecorded
            outbox = delivery.adopt(outbox)
            work.posted(outbox)
        try:
            work.posted(delivery.post(outbox, work.note, just_kept=just_kept))
        except DeliveryWithdrawn as exc:
            logger.warning(
                "turn %s stops posting: forget-all withdrew its outbox (%d of %d chunks, %d of %d notices posted)",
                job.turn_id,
                len(exc.outbox.reply_ids),
                len(exc.outbox.chunks),
                len(exc.outbox.notice_ids),
                len(exc.outbox.notices),
            )
            record.reply_ids = list(exc.outbox.reply_ids)
            return TurnEnd.WITHDRAWN
        except DeliveryInterrupted as exc:
            work.keep_posted(exc.outbox)
            raise exc.cause from exc
        except DeliveryVoiceLost as exc:
            return self._as_the_bot(attempt, work, exc.outbox)
        assert work.outbox is not None  # just posted
        record.reply_ids = list(work.outbox.reply_ids)
        return TurnEnd.DELIVERED

    def _as_the_bot(self, attempt: TurnAttempt, work: TurnUnitOfWork, posted: Outbox) -> TurnEnd:
        """No webhook and no Manage Webhooks mid-delivery: the bot says so, with the notices still owed
        (the outbox replaced: a redelivery posts as the bot too), and the turn ends."""
        logger.warning("turn %s: no Manage Webhooks in its channel mid-delivery", attempt.job.turn_id)
        name = attempt.record.persona  # an alter persona speaks once its configuration is read
        # the messages the answer covered stay covered: their own jobs must not post the notice again
        work.start(
            replace(no_webhook_notice(name, posted.notices[len(posted.notice_ids) :]), covers=posted.covers)
        )
        end = self._deliver(attempt, work, None)
        attempt.record.reply_ids = [*posted.reply_ids, *attempt.record.reply_ids]
        return end

    def _end(
        self, attempt: TurnAttempt, work: TurnUnitOfWork, end: TurnEnd, stm: ShortTermMemoryTurn | None
    ) -> None:
        """The turn's one commit (``TurnUnitOfWork.commit``), for every end that records the turn; a
        turn withdrawn or unanswerable is recorded with what it posted, nothing captured (an answer
        withdrawn midway still answers the messages it covers: their own jobs must not again)."""
        record = attempt.record
        record.end = end
        if not end.recorded:
            return
        delivered = work.outbox if end is TurnEnd.DELIVERED else None
        posted = work.outbox if delivered or record.reply_ids else None
        outcome = TurnOutcome(
            reply_ids=tuple(record.reply_ids),
            apologised=record.apologised,
            trace=delivered.trace if delivered is not None else None,
            covered=tuple(attempt.job.record_id_for(m) for m in (posted.covers if posted else ())),
        )
        work.commit(outcome, delivered, stm)

    def _voice(self) -> TurnVoice:
        return TurnVoice(self.settings, self.personas, self.webhooks)

    def _reader(self) -> ChannelReader:
        return ChannelReader(self.settings, self.discord, self.directory, self.files)
