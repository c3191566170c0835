"""What a server manager curating memories may read, and where.

Manage Server does not let a member read every channel, so a list of the server's memories must not
show what was said in a channel they may not be able to see. A memory's text is shown:

- where a turn could recall it (``kioku.domain.privacy.may_recall``, whatever its review status):
  anywhere in its server when it was said in public, and only in its own channel and that channel's
  threads when it was said in private. The privacy bypass does not widen this: it lets the bot recall
  private memory elsewhere, not a manager read it elsewhere;
- for a memory stored before origins were recorded, which could have been said anywhere, only to
  someone who sees every channel (Administrator), so that legacy memories can still be curated.

Everywhere else a manager sees the memory's id, author, channel and status, never its text.
"""

from __future__ import annotations

from dataclasses import replace

from kioku.domain.ltm.memory import Memory
from kioku.domain.privacy import Place, PrivacyPolicy, may_recall


def text_shown_to_manager(
    memory: Memory, place: Place, policy: PrivacyPolicy, *, sees_every_channel: bool
) -> bool:
    """Whether a manager looking at ``place`` may read ``memory``'s text (see the module docstring)."""
    if memory.origin.channel_id is None:
        return sees_every_channel
    return may_recall(memory.origin, place, replace(policy, bypass=False))
