"""Errors the data layer raises instead of botocore's, so callers never see AWS exceptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kioku.domain.conditions import StoreFailed, StoreUnreachable, TransactionRefused, WriteRefused
from kioku.domain.forgetting import SpeakerForgotten


class StoreError(StoreFailed):
    """Base class of every data-layer error (the domain's ``StoreFailed``)."""


class StoreUnavailable(StoreError, StoreUnreachable):
    """DynamoDB could not be reached or kept failing after botocore's retries."""


class ConditionFailed(StoreError, WriteRefused):
    """A conditional write found the item in another state; ``old_item`` is that state (or None)."""

    def __init__(self, old_item: dict[str, Any] | None) -> None:
        super().__init__("condition check failed")
        self.old_item = old_item


@dataclass(frozen=True, slots=True)
class CancellationReason:
    code: str
    old_item: dict[str, Any] | None = None

    @property
    def condition_failed(self) -> bool:
        return self.code == "ConditionalCheckFailed"


class TransactionCancelled(StoreError, TransactionRefused):
    """A transaction was cancelled; ``reasons`` line up with the transaction's items."""

    def __init__(self, reasons: list[CancellationReason]) -> None:
        super().__init__("transaction cancelled: " + ", ".join(r.code for r in reasons))
        self.reasons = reasons

    @property
    def conflicted(self) -> bool:
        """True when another transaction on the same items raced this one (safe to retry)."""
        return any(r.code in {"TransactionConflict", "ThrottlingError"} for r in self.reasons)


class AlsoRefused(SpeakerForgotten):
    """The caller's parts of a write's transaction (``also``: a turn's outbox, with forget-all's
    checks and its claim) refused it, and nothing was written. ``refused``: the reasons of those
    that failed, by their index in ``also``."""

    def __init__(self, refused: dict[int, CancellationReason]) -> None:
        super().__init__("the notice's outbox refused the write", by_notice=True)
        self.refused = refused
