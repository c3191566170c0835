"""Several personas on one server: creating one, who a message addresses, and whose voice each
message of the channel is.

The main persona speaks as the bot user; an alter persona speaks through a webhook kioku created in
the channel, whose messages carry the bot's ``application_id`` and the persona's name as the
author's username. A turn of one persona reads its own earlier messages as its assistant turns and
every other persona's as another bot's (seed 004's multi-agent rules), never as "you"
(``voiced_history``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Protocol
from urllib.parse import urlsplit

from kioku.discord.models import Message, User
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.settings_edit import InvalidSettingsEdit, apply_persona
from kioku.domain.text import normalize_for_comparison

MAX_AVATAR_URL_CHARS: Final = 512
MAX_NICKNAME_CHARS: Final = 32
MAX_NICKNAMES_PER_PERSONA: Final = 200
WEBHOOK_NAME_REFUSED: Final = ("discord", "clyde")
"""Discord refuses a webhook message whose username contains these (an alter persona's name is one)."""
WEBHOOK_NAMES_REFUSED: Final = frozenset({"everyone", "here"})
MIN_ADDRESSED_NAME_CHARS: Final = 3
"""Counted in the width a name takes: a CJK character, kana or hangul counts 2, so ルナ passes as
"Luna" does, and one ideograph (which ordinary messages may open with) does not."""
# fmt: off
COMMON_OPENING_WORDS: Final = frozenset({
    "the", "and", "but", "for", "nor", "not", "yes", "yeah", "yep", "nope", "nah", "hey", "hello",
    "hiya", "well", "also", "just", "then", "now", "what", "when", "where", "which", "while", "who",
    "whom", "whose", "why", "how", "this", "that", "these", "those", "there", "they", "them", "their",
    "you", "your", "yours", "she", "her", "hers", "him", "his", "its", "our", "ours", "mine", "can",
    "could", "would", "should", "will", "shall", "may", "might", "must", "does", "did", "done", "have",
    "has", "had", "was", "were", "are", "been", "being", "let", "lets", "let's", "okay", "sure",
    "thanks", "thank", "please", "sorry", "wait", "look", "see", "all", "any", "some", "one", "two",
    "both", "each", "every", "many", "much", "more", "most", "other", "such", "only", "own", "same",
    "too", "very", "even", "still", "yet", "anyway", "maybe", "perhaps", "actually", "honestly",
    "really", "like", "guys", "folks", "anyone", "someone", "somebody", "nobody", "nothing",
    "something", "about", "above", "after", "again", "against", "before", "below", "between", "into",
    "from", "with", "without", "over", "under", "until", "upon", "onto", "off", "out", "because",
    "since", "though", "although", "unless", "whether", "else", "wow", "lol", "lmao", "omg", "hmm",
    "huh", "ugh", "good", "great", "nice", "cool", "right", "true", "today", "tonight", "tomorrow",
    "yesterday", "morning", "afternoon", "evening", "night", "welcome", "cheers", "bye", "goodbye",
    "never", "always", "often",
})
# fmt: on
"""Words that open ordinary messages: an alter persona named so would answer them (``name_opens``)."""


def new_persona(
    config: ServerConfig,
    *,
    persona_id: str,
    name: str,
    prompt: str,
    avatar_url: str | None = None,
    memories_from: str | None = None,
) -> Persona:
    """An alter persona for ``config``'s server, or ``InvalidSettingsEdit`` saying why not. Its
    lineage is a new one, ``int(persona_id)`` (a snowflake: unique across servers, as a person's
    personal memories are kept per lineage wherever they are), unless ``memories_from`` names the
    persona whose long-term memories it shares."""
    persona = apply_persona(
        Persona(persona_id=persona_id, lineage_id=int(persona_id), alter=True), name, prompt
    )
    problems: list[str] = alter_name_problems(persona.name)
    if config.persona_named(persona.name) is not None:
        problems.append(f"there is already a persona called **{persona.name}**")
    if memories_from is not None:
        source = config.persona_named(memories_from)
        if source is None:
            problems.append(
                f"there is no persona called **{' '.join(memories_from.split())}** to share memories with"
            )
        else:
            persona = replace(persona, lineage_id=source.lineage_id)
    try:
        persona = replace(persona, avatar_url=checked_avatar_url(avatar_url))
    except InvalidSettingsEdit as exc:
        problems += exc.problems
    if problems:
        raise InvalidSettingsEdit(problems)
    return persona


def alter_name_problems(name: str) -> list[str]:
    """Why ``name`` cannot be an alter persona's: Discord would refuse it as the username of its
    webhook messages, or, opening ordinary messages, it would call the persona to answer them."""
    folded, problems = _fold(name), []
    if folded in WEBHOOK_NAMES_REFUSED or any(part in folded for part in WEBHOOK_NAME_REFUSED):
        problems.append(
            "Discord refuses webhook names containing “discord” or “clyde”, or “everyone” and “here”"
        )
    if not addressable_name(name):
        problems.append(
            f"a persona's name is at least {MIN_ADDRESSED_NAME_CHARS} characters long (two for a name in "
            "Japanese, Chinese or Korean script) and not a common word "
            "such as “the”, “yes” or “hey”: a name opening a message calls its persona, and people open "
            "ordinary messages with those"
        )
    return problems


def addressable_name(name: str) -> bool:
    """Whether ``name`` opening a message may call its persona: not so short or common a word that
    ordinary messages open with it (a persona named so before this rule is called by its trigger
    words and replies only)."""
    folded = _fold(name)
    return name_width(folded) >= MIN_ADDRESSED_NAME_CHARS and folded not in COMMON_OPENING_WORDS


def name_width(name: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in name)


def checked_avatar_url(url: str | None) -> str | None:
    """An https URL Discord can fetch the avatar from (blank: none)."""
    if url is None or not url.strip():
        return None
    url = url.strip()
    parts = urlsplit(url)
    if (
        len(url) > MAX_AVATAR_URL_CHARS
        or parts.scheme != "https"
        or not parts.netloc
        or any(c.isspace() for c in url)
    ):
        raise InvalidSettingsEdit(
            [f"the avatar URL must be an https:// address of at most {MAX_AVATAR_URL_CHARS} characters"]
        )
    return url


def checked_nickname(nickname: str) -> str:
    nickname = " ".join(nickname.split())
    if not 1 <= len(nickname) <= MAX_NICKNAME_CHARS:
        raise InvalidSettingsEdit([f"a nickname is 1 to {MAX_NICKNAME_CHARS} characters"])
    return nickname


def with_nickname(persona: Persona, member_id: str, nickname: str | None) -> Persona:
    """``persona`` calling ``member_id`` ``nickname`` (None: by their own name again)."""
    nicknames = dict(persona.nicknames)
    nicknames.pop(member_id, None)
    if nickname is not None:
        if len(nicknames) >= MAX_NICKNAMES_PER_PERSONA:
            raise InvalidSettingsEdit([f"a persona keeps at most {MAX_NICKNAMES_PER_PERSONA} nicknames"])
        nicknames[member_id] = checked_nickname(nickname)
    return replace(persona, nicknames=tuple(sorted(nicknames.items())))


def whose_name(nickname: str, member_id: str, known: Mapping[str, Iterable[str]]) -> str | None:
    """The member other than ``member_id`` whose username or display name ``nickname`` is, of the
    names ``known`` by user id (a dialogue label ``Display (username)`` counts as both): a nickname
    must not take someone else's name, or what they say about themself would be saved about another."""
    wanted = normalize_for_comparison(nickname)
    for user_id, names in known.items():
        if user_id == member_id:
            continue
        if any(wanted in _label_names(name) for name in names):
            return user_id
    return None


def _label_names(label: str) -> set[str]:
    display, _, username = label.removesuffix(")").rpartition(" (") if label.endswith(")") else ("", "", "")
    return {normalize_for_comparison(name) for name in (label, display, username) if name}


def with_persona(config: ServerConfig, persona: Persona) -> ServerConfig:
    """``config`` (as stored: ``persona`` is the main one) with ``persona`` added or replaced."""
    if not persona.alter:
        return replace(config, persona=persona)
    alters = [p for p in config.alters if p.persona_id != persona.persona_id]
    position = next(
        (i for i, p in enumerate(config.alters) if p.persona_id == persona.persona_id), len(alters)
    )
    alters.insert(position, persona)
    return replace(config, alters=tuple(alters))


def without_persona(config: ServerConfig, persona: Persona) -> ServerConfig:
    return replace(config, alters=tuple(p for p in config.alters if p.persona_id != persona.persona_id))


@dataclass(frozen=True, slots=True)
class ChannelWebhook:
    """The webhook kioku created in a channel; ``token`` is its credential (never logged)."""

    webhook_id: str
    token: str = field(repr=False)


# -- whose voice a message is ----------------------------------------------------------------------


def is_kioku_webhook_message(message: Message, application_id: str) -> bool:
    """A message one of kioku's alter personas posted: through a webhook the application owns."""
    return (
        bool(message.webhook_id)
        and message.application_id == application_id
        and message.author.id != application_id
    )


def persona_of_message(message: Message, application_id: str, config: ServerConfig) -> Persona | None:
    """The persona that posted ``message``, if kioku did: the main persona as the bot user, an alter
    persona through kioku's webhook under its name. None: someone else (or a persona since removed)."""
    if message.author.id == application_id:  # its messages, and its answers to slash commands
        return config.main_persona
    if is_kioku_webhook_message(message, application_id):
        return config.persona_named(message.author.username)
    return None


def voiced_history(
    messages: Sequence[Message],
    application_id: str,
    speaking: PersonaVoice | None,
    main_name: str,
    own_webhook_id: str | None = None,
) -> list[Message]:
    """``messages`` as the persona ``speaking`` (None: the main persona) reads them: its own webhook
    messages are authored by its own id (``speaking.persona_id``), so they are its assistant turns;
    the other personas' (the main one's too, when an alter persona speaks) are another bot's,
    labelled "BOT <name>" (seed 004's multi-agent rules), never a person's nor "you".

    Its own are the ones posted under its name through ``own_webhook_id``, the channel's webhook
    kioku created and keeps (None: not known, so none): a name alone is anyone's to post under,
    through another webhook."""
    voiced = []
    for message in messages:
        author = message.author
        if is_kioku_webhook_message(message, application_id):
            if speaking is not None and is_own_webhook_post(message, speaking, own_webhook_id):
                author = User(id=speaking.persona_id, username=speaking.name, bot=True)
            else:
                author = replace(author, bot=True, global_name=None)
            message = replace(message, author=author, webhook_id=None, member=None)
        elif speaking is not None and author.id == application_id:
            message = replace(message, author=replace(author, username=main_name, global_name=None, bot=True))
        voiced.append(message)
    return voiced


def is_own_webhook_post(message: Message, speaking: PersonaVoice | None, own_webhook_id: str | None) -> bool:
    """Whether ``speaking`` posted ``message``: under its name, through kioku's own webhook of the
    channel (``own_webhook_id``, as stored), not merely under its name."""
    return (
        speaking is not None
        and own_webhook_id is not None
        and message.webhook_id == own_webhook_id
        and message.author.username == speaking.name
    )


class PersonaVoice(Protocol):
    @property
    def persona_id(self) -> str: ...

    @property
    def name(self) -> str: ...


# -- who a message addresses -------------------------------------------------------------------------

_OPENING_PUNCTUATION = re.compile(r"^[\s,.:;!?~\-–—、。「]")


def name_opens(text: str, name: str) -> bool:
    """Whether ``text`` opens with ``name`` as a word ("Luna, …", "luna: …", "Luna"); never for a
    name ordinary messages open with (``addressable_name``)."""
    folded, wanted = _fold(text), _fold(name)
    if not addressable_name(name) or not folded.startswith(wanted):
        return False
    rest = folded[len(wanted) :]
    return not rest or bool(_OPENING_PUNCTUATION.match(rest))


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def ordered_unique(personas: Sequence[tuple[int, Persona]]) -> list[Persona]:
    """The personas by where they were named (stable), each once."""
    seen: dict[str, Persona] = {}
    for _, persona in sorted(personas, key=lambda pair: pair[0]):
        seen.setdefault(persona.persona_id, persona)
    return list(seen.values())
