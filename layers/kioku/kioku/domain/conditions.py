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
