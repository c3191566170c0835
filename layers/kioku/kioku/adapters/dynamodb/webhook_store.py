"""The webhook of each channel where an alter persona spoke: one item per channel, in the server's
partition, read in the turn's first BatchGetItem (no request of its own) and written once, when kioku
creates the webhook. Its token is a credential: the item goes with its channel, and with the
server's last alter persona."""

from __future__ import annotations

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import ItemKey, channel_webhook_key, channel_webhook_range
from kioku.adapters.dynamodb.table import Item, KiokuTable
from kioku.domain.personas import ChannelWebhook


class WebhookStore:
    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    @staticmethod
    def key(guild_id: str, channel_id: str) -> ItemKey:
        return channel_webhook_key(guild_id, channel_id)

    def get(self, guild_id: str, channel_id: str) -> ChannelWebhook | None:
        return webhook_from_item(self._table.get(channel_webhook_key(guild_id, channel_id)))

    def keep(
        self,
        guild_id: str,
        channel_id: str,
        webhook: ChannelWebhook,
        *,
        replacing: ChannelWebhook | None = None,
    ) -> ChannelWebhook:
        """Store ``webhook`` for the channel unless another is stored already (then that one is
        returned: two turns that created one at once agree on the first kept), or ``replacing`` is
        the one stored (a webhook Discord no longer knows)."""
        condition = "attribute_not_exists(pk)"
        values = {}
        if replacing is not None:
            condition += " OR webhook_id = :replaced"
            values[":replaced"] = replacing.webhook_id
        try:
            self._table.put(
                {
                    **channel_webhook_key(guild_id, channel_id).as_item(),
                    "webhook_id": webhook.webhook_id,
                    "token": webhook.token,
                },
                condition=condition,
                values=values or None,
            )
        except ConditionFailed as exc:
            kept = webhook_from_item(exc.old_item)
            if kept is None:
                raise
            return kept
        return webhook

    def forget(self, guild_id: str, channel_id: str) -> None:
        self._table.delete(channel_webhook_key(guild_id, channel_id))

    def channels(self, guild_id: str) -> list[str]:
        """The channels of ``guild_id`` whose webhook is kept."""
        prefix = len(channel_webhook_range(guild_id).prefix)
        return [
            str(item["sk"])[prefix:] for item in self._table.query_range_all(channel_webhook_range(guild_id))
        ]

    def forget_server(self, guild_id: str) -> int:
        """Delete every channel webhook kept for ``guild_id``; returns how many."""
        channels = self.channels(guild_id)
        for channel_id in channels:
            self.forget(guild_id, channel_id)
        return len(channels)


def webhook_from_item(item: Item | None) -> ChannelWebhook | None:
    if not item or not item.get("webhook_id") or not item.get("token"):
        return None
    return ChannelWebhook(str(item["webhook_id"]), str(item["token"]))
