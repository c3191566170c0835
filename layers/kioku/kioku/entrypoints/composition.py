"""The composition root: what a Lambda container builds once and hands to the code it runs.

Each part is built on first use, its adapter (and with it boto3 or httpx) imported only then, so a
PING or a rejected request pays for none of them and ``/chat`` only for its queue. The entry points
are the only code that asks for the container; a service is handed what it uses (a command gets the
container as its ``CommandContext``), never looks it up.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from kioku import clock as kioku_clock
from kioku.config import SecretStr, Settings, get_settings

if TYPE_CHECKING:
    from kioku.adapters.discord_rest import DiscordRest
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.ltm_backfill import LtmVectorBackfill
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.server_removal import ServerRemovals
    from kioku.adapters.dynamodb.stm_janitor import StmJanitor
    from kioku.adapters.dynamodb.stm_store import StmStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.adapters.dynamodb.turn_ledger import TurnLedger
    from kioku.adapters.dynamodb.webhook_store import WebhookStore
    from kioku.adapters.guild_directory import GuildDirectory
    from kioku.adapters.secrets import Secrets
    from kioku.adapters.turn_queue import DeadLetterQueue, TurnQueue
    from kioku.domain.ltm.ports import Embedder
    from kioku.services.turn import TurnService


class Container:
    """The parts of one container. ``given`` replaces parts by name (a test's own store); the rest
    are built from ``settings`` when first asked for."""

    def __init__(
        self, settings: Settings, *, clock: Callable[[], datetime] = kioku_clock.now, **given: object
    ) -> None:
        self.settings = settings
        self.clock = clock
        for name, part in given.items():
            if not isinstance(getattr(Container, name, None), cached_property):
                raise TypeError(f"a container has no part called {name!r}")
            self.__dict__[name] = part

    @cached_property
    def table(self) -> KiokuTable:
        from kioku.adapters.dynamodb.table import KiokuTable

        return KiokuTable(self.settings.TABLE_NAME, clock=self.clock)

    @cached_property
    def config_store(self) -> ConfigStore:
        from kioku.adapters.dynamodb.config_store import ConfigStore

        return ConfigStore(self.table)

    @cached_property
    def stm_store(self) -> StmStore:
        from kioku.adapters.dynamodb.stm_store import StmStore

        return StmStore(self.table)

    @cached_property
    def webhook_store(self) -> WebhookStore:
        from kioku.adapters.dynamodb.webhook_store import WebhookStore

        return WebhookStore(self.table)

    @cached_property
    def stm_janitor(self) -> StmJanitor:
        from kioku.adapters.dynamodb.stm_janitor import StmJanitor

        return StmJanitor(self.table)

    @cached_property
    def server_removals(self) -> ServerRemovals:
        from kioku.adapters.dynamodb.server_removal import ServerRemovals

        return ServerRemovals(self.table)

    @cached_property
    def ltm_backfill(self) -> LtmVectorBackfill:
        from kioku.adapters.dynamodb.ltm_backfill import LtmVectorBackfill

        return LtmVectorBackfill(self.table)

    @cached_property
    def ltm_store(self) -> DynamoMemoryStore:
        from kioku.adapters.dynamodb.ltm_store import BookLayout, DynamoMemoryStore

        return DynamoMemoryStore(self.table, layout=BookLayout.from_settings(self.settings))

    @cached_property
    def turn_ledger(self) -> TurnLedger:
        from kioku.adapters.dynamodb.turn_ledger import TurnLedger

        return TurnLedger(self.table)

    @cached_property
    def turn_queue(self) -> TurnQueue:
        from kioku.adapters.turn_queue import TurnQueue

        return TurnQueue(self.settings.TURN_QUEUE_URL)

    @cached_property
    def dead_letter_queue(self) -> DeadLetterQueue | None:
        """None when ``TURN_DEAD_LETTER_QUEUE_URL`` is unset: failures are left to the queue's redrive."""
        from kioku.adapters.turn_queue import DeadLetterQueue

        url = self.settings.TURN_DEAD_LETTER_QUEUE_URL
        return DeadLetterQueue(url) if url else None

    @cached_property
    def secrets(self) -> Secrets:
        from kioku.adapters.secrets import load_secrets

        return load_secrets(self.settings)

    @cached_property
    def discord(self) -> DiscordRest:
        from kioku.adapters.discord_rest import DiscordRest

        return DiscordRest(self.settings.DISCORD_API_BASE_URL, self.secrets.discord_bot_token)

    @cached_property
    def guild_directory(self) -> GuildDirectory:
        from kioku.adapters.guild_directory import GuildDirectory

        return GuildDirectory(self.discord)

    @cached_property
    def embedder(self) -> Embedder | None:
        """What ``EMBEDDINGS_MODEL`` chooses: unset, the embedded model (imported and loaded on the
        first text embedded); ``none``, no embeddings (ranking by words); any other value, that model
        of an OpenAI-compatible endpoint."""
        choice = self.settings.embeddings_choice
        if choice == "none":
            return None
        if choice == "embedded":
            from kioku.adapters.lazy_embedder import LazyEmbedder

            return LazyEmbedder()
        from kioku.adapters.llm.embeddings import OpenAIEmbeddings

        return OpenAIEmbeddings.from_settings(self.settings, api_key=self.secrets.llm_api_key)

    @cached_property
    def turn_service(self) -> TurnService:
        from kioku.adapters.discord_cdn import DiscordCdn
        from kioku.adapters.dynamodb.turn_ledger import RateLedger
        from kioku.adapters.dynamodb.turn_repository import TurnRepository
        from kioku.adapters.llm.registry import make_chat_model
        from kioku.services.persona_voice import PersonaWebhooks
        from kioku.services.turn import TurnService

        model_settings = self.settings
        if self.secrets.llm_api_key:
            model_settings = self.settings.model_copy(
                update={"LLM_API_KEY": SecretStr(self.secrets.llm_api_key)}
            )
        return TurnService(
            settings=self.settings,
            discord=self.discord,
            model=make_chat_model(model_settings),
            stm_store=self.stm_store,
            ltm_store=self.ltm_store,
            turns=TurnRepository(self.table, self.stm_store, self.ltm_store),
            clock=self.clock,
            directory=self.guild_directory,
            rates=RateLedger(self.table),
            embedder=self.embedder,
            webhooks=PersonaWebhooks(self.discord, self.webhook_store),
            files=DiscordCdn(self.settings.DISCORD_CDN_BASE_URL),
        )


def container() -> Container:
    """This container's parts, for the settings it runs with."""
    return _container(get_settings())


def forget() -> None:
    """Drop the parts built so far (a new local stack, a new test): the next ask builds anew."""
    _container.cache_clear()


@lru_cache(maxsize=1)
def _container(settings: Settings) -> Container:
    return Container(settings)
