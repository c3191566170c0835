"""What the outside world can refuse or fail at, named for the use cases: the adapters raise these
(their own errors subclass them), so services catch a condition, never an adapter's class."""

from __future__ import annotations


class DiscordRefused(RuntimeError):
    """Discord refused a request: ``status`` is the HTTP status, ``code`` Discord's JSON error code
    when it sent one."""

    def __init__(self, status: int, code: int | None, message: str) -> None:
        super().__init__(f"Discord answered HTTP {status} (code {code}): {message}")
        self.status = status
        self.code = code
        self.message = message


class StoreFailed(Exception):
    """The data store failed a request or refused a conditional write."""


class StoreUnreachable(StoreFailed):
    """The data store could not be reached, or kept failing after its retries."""


class WriteRefused(StoreFailed):
    """A conditional write found the item in another state than the one it was conditioned on:
    nothing was written."""


class TransactionRefused(StoreFailed):
    """A transaction was cancelled (one of its conditions failed, or another transaction raced it):
    nothing of it was written."""


class ServerReadded(Exception):
    """A removed server's mark is gone or newer: kioku was added back (or removed again) meanwhile,
    so its data is kept."""
