"""Memories people write by hand (``/personal memories add``, ``/server memories add``, ``Remember
this``), saved by the worker: it can ask Discord how private the channel is, which the interactions
endpoint cannot. The save is the model's (``ltm.save_memory``), so its rules apply once: the personal
switch, the privacy level, the near-duplicate answer, the limit, the review mode. A redelivered job
finds its own save (the draft carries the interaction's id) and answers with the same id."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from kioku.config import Settings
from kioku.domain.forgetting import snowflake_time
from kioku.domain.ltm.memory import MemoryScope, MemoryStatus
from kioku.domain.ltm.ports import Embedder, MemoryStore
from kioku.domain.ltm.saving import names_user, pin_user_token
from kioku.domain.ltm.statuses import SaveStatus
from kioku.domain.ltm.targets import TargetUser
from kioku.domain.ltm.tools import CREATE_TOOL_NAME, awaits_review
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.privacy import ChannelDescription
from kioku.domain.tools import ToolResult
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.domain.turn_jobs import MemoryRequest, TurnJob
from kioku.domain.why import MemoryUse
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.ltm import recall_context
from kioku.services.ltm_saving import Saving, save_memory
from kioku.services.tool_failures import answer_for
from kioku.services.turn_ports import GuildLookup, TurnDiscord

logger = logging.getLogger(__name__)

SAVED: Final = "Saved as memory **#{id}**{kind}{until}. Only you see this."
PENDING: Final = (
    "Saved as server memory **#{id}**{until}: this server reviews its members' memories, so I recall "
    "it once a manager approves it (`/server memories review`)."
)
REFUSED: Final[dict[str, str]] = {
    SaveStatus.ALREADY_REMEMBERED: (
        "Nothing was saved: memory **#{id}** already says nearly this. Forget it first if it changed."
    ),
    SaveStatus.LIMIT_EXCEEDED: (
        "Nothing was saved: this memory book is full (a memory for every persona counts in each "
        "persona's book). Forget a memory first (`/personal memories forget` or `/server memories forget`)."
    ),
    SaveStatus.DISABLED: "Nothing was saved: personal memories are turned off on this server (`/capabilities`).",
    SaveStatus.PRIVACY_RESTRICTED: (
        "Nothing was saved: your privacy setting keeps personal memories off (`/personal privacy`)."
    ),
    SaveStatus.FORGOTTEN: "Nothing was saved: you asked me to forget everything since that message.",
}
NOT_SAVED: Final = "Nothing was saved: {message}."
ALREADY_SAID: Final = "Nothing new was saved: memory **#{id}** already says this."


@dataclass(frozen=True, slots=True)
class HandWriting:
    """What the worker hands a memory written by hand."""

    settings: Settings
    discord: TurnDiscord
    directory: GuildLookup
    store: MemoryStore
    config_of: Callable[[str], ServerConfig]
    """The server's configuration, read when the job runs."""
    embedder: Embedder | None = None


def save_by_hand(job: TurnJob, parts: HandWriting, now: datetime) -> ToolResult:
    """Save the job's memory through the tool's one path, then answer its interaction with the id
    (or the refusal): the answer is edited in place, so a redelivery answers the same."""
    request = job.memory
    if request is None:
        raise ValueError("a memory job without its request")
    turn = _turn(job, parts, now, request)
    result = _save(job, turn, parts, request, now)
    parts.discord.edit_original_response(
        str(job.application_id), str(job.interaction_token), answer_text(result, request)
    )
    return result


def _turn(job: TurnJob, parts: HandWriting, now: datetime, request: MemoryRequest) -> TurnContext:
    """The asker's turn, as a save there would see it: the channel's privacy asked of Discord."""
    config = parts.config_of(job.guild_id) if job.guild_id else ServerConfig()
    if job.guild_id is None:
        channel = ChannelDescription(job.channel_id, private=False)
    else:
        channel = parts.directory.describe_channel(job.guild_id, parts.discord.get_channel(job.channel_id))
    author = job.author
    nickname = job.member.nick if job.member else None
    said = request.message_id or job.turn_id
    return TurnContext(
        guild_id=job.guild_id,
        channel_id=job.channel_id,
        user=Participant(author.id, author.username, author.global_name, nickname),
        bot=BotIdentity(parts.settings.DISCORD_APPLICATION_ID, config.persona.name),
        config=config,
        profile=UserProfile(user_id=author.id),
        now=now,
        parent_channel_id=channel.parent_channel_id,
        channel_private=channel.private,
        private_thread=channel.private_thread,
        sent_at=snowflake_time(said),
        turn_id=job.turn_id,
    )


def _save(
    job: TurnJob, turn: TurnContext, parts: HandWriting, request: MemoryRequest, now: datetime
) -> ToolResult:
    user = turn.user
    subject = TargetUser(user_id=user.user_id, display_name=user.display_name, username=user.username)
    expires_at = now + timedelta(days=request.expires_in_days) if request.expires_in_days else None
    try:
        if request.personal:
            if not turn.config.capabilities.personal_memories_enabled:
                return ToolResult(SaveStatus.DISABLED, {"message": "personal memories are turned off"})
            scope = MemoryScope.personal(user.user_id, request.lineage)
            target = parts.store.personal_target(user.user_id)
            saving = Saving(scope, job.content, subject, target, user.user_id, expires_at=expires_at)
        else:
            content = pin_user_token(job.content, user.display_name)
            status = MemoryStatus.ACTIVE
            if awaits_review(turn.config, lambda: request.manages_server):
                status = MemoryStatus.PENDING
            named = user.user_id if names_user(job.content) else None
            scope = MemoryScope.server(turn.guild_id or "", request.lineage)
            saving = Saving(scope, content, subject, None, named, status, expires_at=expires_at)
        people = [user.user_id] if request.personal else []
        memories = parts.store.recall(
            turn.guild_id, request.lineage, people, place=turn.place, policy=turn.config.privacy
        )
        embeddings = TurnEmbeddings(parts.embedder) if parts.embedder else None
        return save_memory(
            saving,
            turn,
            store=parts.store,
            settings=parts.settings,
            recalled=recall_context(turn, memories),
            embeddings=embeddings,
        )
    except Exception as exc:
        answer = answer_for(CREATE_TOOL_NAME, exc)
        if answer is None:
            raise
        return answer


def answer_text(result: ToolResult, request: MemoryRequest) -> str:
    """What the person who asked reads of the save."""
    data = result.data if isinstance(result.data, dict) else {}
    memory_id = data.get("memory_id", "")
    until = ""
    if request.expires_in_days:
        until = f", for {request.expires_in_days} day{'s' if request.expires_in_days != 1 else ''}"
    if result.status == SaveStatus.SAVED and any(used.use is MemoryUse.FOUND for used in result.touched):
        return ALREADY_SAID.format(id=memory_id)
    if result.status == SaveStatus.SAVED:
        kind = " (every persona's)" if request.personal and request.lineage == 0 else ""
        return SAVED.format(id=memory_id, kind=kind, until=until)
    if result.status == SaveStatus.PENDING_REVIEW:
        return PENDING.format(id=memory_id, until=until)
    message = str(data.get("message", "it could not be saved")).rstrip(".")
    return REFUSED.get(str(result.status), NOT_SAVED).format(id=memory_id, message=message)
