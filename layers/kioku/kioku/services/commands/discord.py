"""How commands look when they answer: the embed colours and times. Refusals and failures are
``error_replies``'; Discord's protocol (its numbers, the shape of an interaction response) is
``kioku.discord``'s."""

from __future__ import annotations

from datetime import datetime
from typing import Final

EMBED_COLOR_INFO: Final = 0x5865F2
EMBED_COLOR_ERROR: Final = 0xED4245
EMBED_COLOR_REFUSAL: Final = 0xFEE75C


def relative_time(moment: datetime | None) -> str:
    """Discord's timestamp markup ("3 days ago", in each reader's language); "never" for None."""
    return f"<t:{int(moment.timestamp())}:R>" if moment else "never"
