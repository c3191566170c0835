"""One chat turn, from a queued job to a posted reply, as named steps over one ``TurnState``:

    gate (the author's rate) → read Discord → read memory (and the turn's own record and outbox:
    a turn already done ends here) → recall → assemble the context → converse (the model and its
    tools) → deliver (the outbox) → commit (capture, record as done, drop the outbox).

Once an answer exists, it is put in the turn's outbox (``TurnRepository``) before anything is
posted; a redelivered turn that finds an answered outbox skips to delivery and never asks the model
again. A model that fails gets the user a short apology, still captured and counted, as the channel
saw it. Discord refusing a post raises, so the queue retries the turn; a store failing the commit
raises too, the outbox still there for the retry.

The steps live here; what they lean on lives by job: ``turn_reading`` (Discord's channel, history,
names, dialogue), ``turn_conversation`` (the model's messages, its requests and tools),
``turn_delivery`` (posting an outbox), ``turn_state`` (the state and the record).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final

from kioku import clock as kioku_clock
from kioku.adapters.llm.base import ChatModel
from kioku.config import Settings
from kioku.domain.attachment_text import AttachmentFiles
from kioku.domain.conditions import DiscordRefused, StoreFailed
from kioku.domain.forgetting import SpeakerForgotten, forgotten_since
from kioku.domain.ltm.memory import MemoryStoreFailed
from kioku.domain.ltm.ports import Embedder, MemoryStore
from kioku.domain.ltm.recall import recall_query, recall_subjects
from kioku.domain.models import PrivacyLevel, ServerConfig, UserProfile
from kioku.domain.replies import at_most, split_reply
from kioku.domain.stm.capture import turn_lines, with_reply_id
from kioku.domain.stm.entries import StmLimits
from kioku.domain.stm.intent import has_explicit_long_term_intent
from kioku.domain.text import readable_mentions
from kioku.domain.turn import (
    BotIdentity,
    LlmUnavailable,
    Outbox,
    PersonaRemoved,
    TurnAlreadyRecorded,
    TurnContext,
    TurnEnd,
    TurnOutcome,
)
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.domain.why import trace_of
from kioku.services import ltm
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.persona_voice import PersonaWebhooks, TurnVoice, no_webhook_notice, webhook_channel
from kioku.services.stm import PersonaGuesses, ShortTermMemoryTurn, turn_memory_query
from kioku.services.turn_claims import claimed, noting
from kioku.services.turn_conversation import Conversation
from kioku.services.turn_delivery import (
    Delivery,
    DeliveryInterrupted,
    DeliveryVoiceLost,
    DeliveryWithdrawn,
    responder_for,
)
from kioku.services.turn_ports import GuildLookup, ShortTermMemoryWrites, TurnDiscord, TurnRates, TurnStore
from kioku.services.turn_reading import ChannelReader, author_of, bot_username, mentions_another_channel
from kioku.services.turn_state import TurnRecord, TurnState, key_of

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
        ``TurnClaimed`` if another attempt holds the outbox (``turn_claims``)."""
        state = TurnState(
            job=job,
            key=key_of(job),
            now=self.clock(),
            time_left=time_left,
            guessed=self._voice().speaking(job),
        )
        message_id, receive = delivery or (None, 2 if redelivered else 1)
        state.claim = replace(state.claim, message_id=message_id, receive=receive)
        self._end(state, self._take(state, redelivered))
        return state.record

    def _take(self, state: TurnState, redelivered: bool) -> TurnEnd:
        """The steps, one way through, up to how the turn ends: a rate notice goes straight to
        delivery, and so does an answer an earlier attempt kept; any step may end the turn early."""
        end = self._gate(state, redelivered)
        if end is not None:
            return end
        if state.outbox is None:  # no rate notice: the turn reads, and answers unless already answered
            end = self._read_discord(state) or self._read_memory(state)
            if end is not None:
                return end
            if not state.answered:
                self._recall(state)
                self._assemble(state)
                end = self._converse(state)
        return end or self._deliver(state)

    # -- the steps ------------------------------------------------------------------------------

    def _gate(self, state: TurnState, redelivered: bool) -> TurnEnd | None:
        """Count the turn against the minute its author sent it in, once ever (a redelivery, a
        duplicate, a redrive get the number its first attempt got). The first turn over the limit
        gets one short notice, posted and recorded like an answer; later ones end in silence,
        unrecorded (a ``/chat`` still gets the notice: its answer would otherwise stay
        "thinking…"). A turn already done ends here before any notice."""
        job = state.job
        if redelivered or self.rates is None:
            return None
        limit = self.settings.TURN_RATE_LIMIT_PER_MINUTE
        try:
            taken = self.rates.take(state.key.author_id, job.turn_id, state.key.sent_at, limit)
        except StoreFailed:
            logger.warning("the turn rate could not be counted; the turn goes on")
            return None
        if taken is not None and taken <= limit:
            return None
        if self._done_already(state):
            return TurnEnd.ALREADY_DONE
        logger.info("turn %s is over its author's rate of %d a minute", job.turn_id, limit)
        state.record.rate_limited = True
        if taken is None and job.source is not TurnSource.SLASH_COMMAND:
            return TurnEnd.SILENCED
        state.outbox = Outbox(reply=RATE_NOTICE, chunks=(RATE_NOTICE,), capture=False)
        return None

    def _done_already(self, state: TurnState) -> bool:
        """Whether the turn is recorded as done (a copy back after SQS's deduplication window): read
        on its own only where the turn would not reach its first read (``_read_memory``)."""
        done = self.turns.done(state.key)
        if done is None:
            return False
        logger.info("turn %s was already completed", state.job.turn_id)
        state.record.reply_ids = list(done.reply_ids)
        return True

    def _read_discord(self, state: TurnState) -> TurnEnd | None:
        """The channel (its privacy, read on every turn: a channel can turn private at any moment)
        and the conversation as it stood when the turn's message was sent."""
        job, reader = state.job, self._reader()
        reader.typing(job.channel_id)
        try:
            state.channel = reader.describe_channel(job)
            state.history = reader.history(job, state.now)
        except DiscordRefused as exc:
            if exc.status not in PERMANENT_REFUSALS:
                raise
            # The bot lost access to the channel, or it is gone: no retry can answer it.
            logger.warning("turn %s ends unanswered: Discord refused its channel (%s)", job.turn_id, exc)
            return TurnEnd.UNANSWERABLE
        # an alter persona is a voice of its own: its id, its name, the others' messages as other bots'
        alter = state.guessed if state.guessed.alter else None
        bot = BotIdentity(
            user_id=alter.persona_id if alter else self.settings.DISCORD_APPLICATION_ID,
            username=alter.name if alter else bot_username(state.history, self.settings),
        )
        voice = self._voice()
        state.heard, state.voiced_by = state.history, voice.known_webhook_id(state)
        participants = voice.heard_by(state, bot.user_id)
        # The persona's name heads the bot's own messages, as the system prompt calls it: the name
        # this container last saw; a wrong guess (the persona was renamed) reads the history again.
        guessed_name = state.guessed.name
        # Other channels are named only once the server's privacy settings are read, with memory.
        names = reader.mention_names(job, state.channel, state.history, bot.user_id, guessed_name, None)
        state.dialogue = reader.dialogue(state.history, bot.user_id, names, guessed_name)
        state.turn = TurnContext(
            guild_id=job.guild_id,
            channel_id=job.channel_id,
            user=author_of(job, participants),
            bot=bot,
            config=ServerConfig(guild_id=job.guild_id),
            profile=UserProfile(user_id=state.key.author_id),
            now=state.now,
            parent_channel_id=state.channel.parent_channel_id,
            participants=participants,
            llm_has_tools=self.settings.LLM_SUPPORTS_TOOLS,
            explicit_ltm_intent=has_explicit_long_term_intent(job.content),
            channel_private=state.channel.private,
            private_thread=state.channel.private_thread,
            author_ids=frozenset(state.dialogue.author_ids),
            mention_names=names,
            sent_at=state.key.sent_at,
            turn_id=job.turn_id,
        )
        return None

    def _read_memory(self, state: TurnState) -> TurnEnd | None:
        """One BatchGetItem for everything with a known key (configuration, profile, short-term
        rows, long-term memory books, this turn's record and outbox), one Query for other channels.
        A turn already done ends here; an outbox an earlier attempt left is taken up."""
        job, turn = state.job, state.turn
        assert turn is not None  # read from Discord
        limits = StmLimits.from_settings(self.settings)
        read = self.turns.read(
            state.key,
            turn_memory_query(
                guild_id=job.guild_id,
                channel_id=job.channel_id,
                user_id=turn.user.user_id,
                parent_channel_id=turn.parent_channel_id,
                now=state.now,
                limits=limits,
                guessed=state.guessed,
                speaking=job.persona.persona_id if job.persona else None,
            ),
            recall_lineage=state.guessed.lineage_id,
            recall_people=[person.user_id for person in recall_subjects(turn)],
            webhook_of=(job.guild_id, webhook_channel(state)) if job.persona and job.guild_id else None,
        )
        self.personas.saw(job.guild_id, read.memory.config.main_persona)
        state.read = read
        if read.memory.persona_gone:
            logger.info("turn %s is not answered: its persona was removed", job.turn_id)
            self._voice().say_removed(job, self.discord)  # a /chat's "thinking…" must not stay
            return TurnEnd.PERSONA_REMOVED
        if read.done is not None:
            logger.info("turn %s was already completed", job.turn_id)
            state.record.reply_ids = list(read.done.reply_ids)
            return TurnEnd.ALREADY_DONE
        if read.outbox is not None and forgotten_since(read.author_forgotten_at, state.key.sent_at):
            # forget-all came after the message: what the outbox would post or capture quotes it
            logger.warning("turn %s: outbox dropped unposted, its author forgot everything", job.turn_id)
            return TurnEnd.WITHDRAWN
        loaded = read.memory
        turn = replace(turn, config=loaded.config, profile=loaded.profile)
        state.record.persona, state.record.lineage = turn.config.persona.name, turn.config.persona.lineage_id
        stored_webhook_id = read.webhook.webhook_id if read.webhook else None
        revoice = job.persona is not None and stored_webhook_id != state.voiced_by
        if revoice:  # the channel's webhook as stored decides which messages are the persona's own
            state.voiced_by = stored_webhook_id
            turn = replace(turn, participants=self._voice().heard_by(state, turn.bot.user_id))
        if state.channel is not None and (
            revoice
            or turn.bot_name != state.guessed.name
            or mentions_another_channel(job, state.channel, state.history)
        ):
            reader = self._reader()
            names = reader.mention_names(
                job, state.channel, state.history, turn.bot.user_id, turn.bot_name, turn
            )
            state.dialogue = reader.dialogue(state.history, turn.bot.user_id, names, turn.bot_name)
            turn = replace(turn, mention_names=names, author_ids=frozenset(state.dialogue.author_ids))
        state.turn = turn
        state.stm = ShortTermMemoryTurn(
            self.stm_store,
            turn,
            loaded.state,
            limits,
            state.channel.name if state.channel else None,
            described_at=state.now,
        )
        if job.persona is not None:
            self._voice().speak_as_persona(state, read)
        if read.outbox is not None:
            state.outbox, state.outbox_kept = claimed(self.turns, state, read.outbox), True
            if read.outbox.answered:
                logger.warning(
                    "turn %s: delivering the answer an earlier attempt recorded (%d of %d chunks posted)",
                    job.turn_id,
                    len(read.outbox.reply_ids),
                    len(read.outbox.chunks),
                )
                state.record.resumed, state.record.apologised = True, read.outbox.apologised
        return None

    def _recall(self, state: TurnState) -> None:
        """Long-term recall from the books read with the turn; a wrong lineage guess costs one read."""
        turn, read = state.turn, state.read
        assert turn is not None and read is not None  # read by the steps before
        lineage = turn.config.persona.lineage_id
        if self.embedder is not None:
            state.embeddings = TurnEmbeddings(self.embedder)
        try:
            memories = self.turns.recall(
                read, lineage, place=turn.place, policy=turn.config.privacy, now=turn.now
            )
        except MemoryStoreFailed:
            logger.exception("long-term memory recall failed; the turn goes on without it")
            return
        query = recall_query(
            turn,
            readable_mentions(state.job.content, turn.mention_names),
            state.dialogue.items if state.dialogue else [],
        )
        state.recalled = ltm.recall_context(
            turn,
            memories,
            query=query,
            budget=self.settings.LTM_RECALL_BUDGET_CHARS,
            embeddings=state.embeddings,
        )

    def _assemble(self, state: TurnState) -> None:
        """The model's messages and the tools offered (``Conversation.assemble``)."""
        self._conversation(state).assemble()

    def _converse(self, state: TurnState) -> TurnEnd | None:
        """Ask the model, running its tools for a few rounds, and put the answer in the outbox."""
        turn, job = state.turn, state.job
        assert turn is not None  # read by the steps before
        earlier = state.outbox.notices if state.outbox is not None else ()
        conversation = self._conversation(state)
        try:
            reply = conversation.ask(earlier)
            chunks = at_most(split_reply(reply), self.settings.MAX_REPLY_MESSAGES) or [EMPTY_REPLY]
        except LlmUnavailable as exc:
            logger.warning("the model failed for turn %s: %s", job.turn_id, exc)
            state.record.apologised = True
            reply, chunks = APOLOGY, [APOLOGY]
        except TurnAlreadyRecorded:
            return TurnEnd.ALREADY_DONE  # a twin committed it before this attempt kept its notices
        except PersonaRemoved:
            return TurnEnd.PERSONA_REMOVED  # removed since the read: its notices go with it
        # what the tools saved stays saved, after an apology too (and an earlier attempt's): show it
        state.outbox = Outbox(
            reply=reply,
            chunks=tuple(chunks),
            notices=conversation.owed_notices(earlier),
            # a person with full privacy has nothing stored, in the outbox either: the turn is counted
            lines=()
            if turn.profile.privacy_level is PrivacyLevel.FULL
            else tuple(turn_lines(job, turn, reply, state.now)),
            apologised=state.record.apologised,
            quoted=conversation.quoted(),
            trace=trace_of(
                turn,
                channel_name=state.channel.name if state.channel else None,
                recalled=state.recalled,
                rows=state.stm.context().shown if state.stm else (),
                tool_results=(result for _, result in state.record.tool_results),
            ),
        )
        state.outbox_kept = False
        return None

    def _deliver(self, state: TurnState) -> TurnEnd:
        """Keep the outbox, then post what it has not posted: it is in DynamoDB before the first post,
        claimed by this attempt, and what it posted is noted before each next post."""
        assert state.outbox is not None  # a rate notice, an earlier attempt's, or this one's answer
        responder = state.responder or responder_for(
            state.job, self.discord, self.settings.DISCORD_APPLICATION_ID
        )
        delivery = Delivery(self.discord, state.job, responder)
        just_kept = not state.outbox_kept
        if just_kept:
            outbox = state.outbox = replace(
                state.outbox,
                claim=str(state.claim),
                webhook_ids=tuple(dict.fromkeys((*state.outbox.webhook_ids, *responder.webhook_ids))),
            )
            try:
                kept = self.turns.keep(state.key, outbox, state.now, state.taking_from)
            except TurnAlreadyRecorded:
                return TurnEnd.ALREADY_DONE  # a twin committed it meanwhile
            except PersonaRemoved:
                return TurnEnd.PERSONA_REMOVED  # removed since the read: nothing in its voice
            if not kept:
                logger.warning(
                    "turn %s posts nothing: someone it answers or quotes forgot everything", state.job.turn_id
                )
                return TurnEnd.WITHDRAWN
            state.outbox_kept, state.taking_from = True, None  # this claim replaced the one taken over
        else:  # an earlier attempt's: what it posted may be in the channel, unrecorded
            outbox = state.outbox = delivery.adopt(state.outbox)
        try:
            state.outbox = delivery.post(outbox, noting(self.turns, state), just_kept=just_kept)
        except DeliveryWithdrawn as exc:
            logger.warning(
                "turn %s stops posting: forget-all withdrew its outbox (%d of %d chunks, %d of %d notices posted)",
                state.job.turn_id,
                len(exc.outbox.reply_ids),
                len(exc.outbox.chunks),
                len(exc.outbox.notice_ids),
                len(exc.outbox.notices),
            )
            state.record.reply_ids = list(exc.outbox.reply_ids)
            return TurnEnd.WITHDRAWN
        except DeliveryInterrupted as exc:
            self._keep_posted(state, exc.outbox)
            raise exc.cause from exc
        except DeliveryVoiceLost as exc:
            return self._as_the_bot(state, exc.outbox)
        state.record.reply_ids = list(state.outbox.reply_ids)
        return TurnEnd.DELIVERED

    def _as_the_bot(self, state: TurnState, posted: Outbox) -> TurnEnd:
        """No webhook and no Manage Webhooks mid-delivery: the bot says so, with the notices still owed
        (the outbox replaced: a redelivery posts as the bot too), and the turn ends."""
        logger.warning("turn %s: no Manage Webhooks in its channel mid-delivery", state.job.turn_id)
        name = state.record.persona  # an alter persona speaks once its configuration is read
        state.outbox = no_webhook_notice(name, posted.notices[len(posted.notice_ids) :])
        state.responder, state.outbox_kept = None, False
        end = self._deliver(state)
        state.record.reply_ids = [*posted.reply_ids, *state.record.reply_ids]
        return end

    def _end(self, state: TurnState, end: TurnEnd) -> None:
        """The turn's one commit, for every end that records the turn: capture what was delivered
        (an apology too: the channel saw it) unless its outbox says not, record the turn as done and
        drop its outbox, in one transaction. A turn withdrawn or unanswerable is recorded with what
        it posted, nothing captured."""
        state.record.end = end
        if not end.recorded:
            return
        outbox = state.outbox if end is TurnEnd.DELIVERED else None
        outcome = TurnOutcome(
            reply_ids=tuple(state.record.reply_ids),
            apologised=state.record.apologised,
            trace=outbox.trace if outbox is not None else None,
        )
        capture = None
        if outbox is not None and outbox.capture and state.stm is not None:
            capture = state.stm.capture_of(with_reply_id(outbox.lines, outcome.reply_ids))
        try:
            self.turns.commit(state.key, outcome, state.now, capture)
        except TurnAlreadyRecorded:
            logger.info("turn %s was recorded by another attempt meanwhile", state.job.turn_id)
            if outbox is not None:
                self._drop_outbox(state, outbox)
        except SpeakerForgotten:
            logger.warning(
                "turn %s is dropped, not captured: its speaker asked to forget everything since",
                state.job.turn_id,
            )
            with suppress(TurnAlreadyRecorded):
                self.turns.commit(state.key, outcome, state.now, None)

    def _drop_outbox(self, state: TurnState, outbox: Outbox) -> None:
        """Drop what this attempt kept after a twin worker committed the turn (its commit deleted
        the outbox before this one's keep landed): the user's words must not wait 16 days there."""
        try:
            self.turns.drop(state.key, outbox)
        except StoreFailed:
            logger.exception(
                "turn %s: the outbox of a twin attempt stays until it expires", state.job.turn_id
            )

    def _voice(self) -> TurnVoice:
        return TurnVoice(self.settings, self.personas, self.webhooks)

    def _reader(self) -> ChannelReader:
        return ChannelReader(self.settings, self.discord, self.directory, self.files)

    def _conversation(self, state: TurnState) -> Conversation:
        return Conversation(
            self.settings, self.model, self.turns, self.discord, self.directory, self.ltm_store, state
        )

    def _keep_posted(self, state: TurnState, outbox: Outbox) -> None:
        try:
            self.turns.keep(state.key, outbox, state.now)
        except StoreFailed:
            logger.exception(
                "could not note what turn %s posted; the retry reads the channel", state.job.turn_id
            )
