"""Who a memory is about: the model names a user, this finds them or says why it cannot."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, TypeVar

from kioku.discord.models import Member
from kioku.discord.snowflake import is_snowflake
from kioku.domain.ltm.ports import MemberDirectory
from kioku.domain.models import Participant
from kioku.domain.text import USER_MENTION, normalize_for_comparison, one_line_name
from kioku.domain.turn import TurnContext

MAX_AMBIGUOUS_CANDIDATES: Final = 3
MEMBER_SEARCH_LIMIT: Final = 100
"""Members the guild search returns for a name, as the original asks."""
MIN_BARE_ID_DIGITS: Final = 17
"""A bare number the model writes is taken for a user id only this long (every Discord id is, since
its first month); a shorter one must be an id the turn knows: it is more likely a count or a year."""
_AFFIX_PREFIX = re.compile(
    r"^(?:master|mistress|mister|mr|mrs|ms|miss|mx|dr|doctor|sir|madam|madame|lady|lord|dame|"
    r"captain|capt|professor|prof|senpai|sensei)\.?\s+",
    re.IGNORECASE,
)
_AFFIX_SUFFIX = re.compile(
    r"(?:[-\s](?:san|sama|kun|chan|senpai|sensei|dono|tan|shi)|"
    r"さん|様|さま|くん|君|ちゃん|先輩|先生|殿)$",
    re.IGNORECASE,
)
T = TypeVar("T")


class TargetKind(StrEnum):
    USER = "user"
    BOT_SELF = "bot_self"
    OTHER_BOT = "other_bot"
    BRIDGE = "bridge"
    AMBIGUOUS = "ambiguous"
    NOT_FOUND = "not_found"


@dataclass(frozen=True, slots=True)
class TargetUser:
    user_id: str
    display_name: str
    username: str = ""

    def label(self) -> str:
        """``Display (@username)``: enough for the model to ask which one was meant. Tool results
        carry it to the model, so both names pass the neutraliser, as every name it reads does."""
        display, username = one_line_name(self.display_name), one_line_name(self.username)
        if username and username != display:
            return f"{display} (@{username})"
        return display


@dataclass(frozen=True, slots=True)
class TargetResolution:
    kind: TargetKind
    user: TargetUser | None = None
    candidates: tuple[str, ...] = ()


def comparable_name(name: str) -> str:
    """Trimmed, leading ``@`` dropped, whitespace collapsed, case-folded."""
    return normalize_for_comparison(name.strip().removeprefix("@"))


def resolve_target(
    target: str,
    turn: TurnContext,
    members: MemberDirectory | None,
) -> TargetResolution:
    """Find the user ``target`` names, down seed 003's ladder: an id or mention (of a member); the
    people in the conversation, the speaker first; what the speaking persona calls someone (its
    nicknames), unless a member of the guild has that name; the guild's member search; the names of
    webhook personas (bridges).
    A name no rung finds is tried again without its titles and honorifics (``without_affixes``).
    At each rung a match on a primary name (username, global name) wins over one on a nickname
    (the guild display name); the result is ambiguous only when a rung finds several people on its
    best tier.

    A person must be a current member of the turn's guild (``members``; None: nobody is); in a DM the only
    person is the DM partner. Naming the bot itself, another bot or a bridged user is reported as
    such: their memories belong to the server. Raises ``MemberSearchFailed`` when Discord was needed
    and failed.
    """
    raw = target.strip()
    core = without_affixes(raw)
    if turn.is_dm:
        resolution = _resolve_in_dm(raw, turn)
        if resolution.kind is TargetKind.NOT_FOUND and core != raw.removeprefix("@").strip():
            return _resolve_in_dm(core, turn)
        return resolution
    people = _people_in_conversation(turn)
    user_id = _mentioned_id(raw, known_ids={turn.bot.user_id, *people})
    if user_id is not None:
        return _resolve_id(user_id, turn, people, members)
    resolution = _resolve_name(raw, turn, people, members)
    if resolution.kind is TargetKind.NOT_FOUND and core != raw.removeprefix("@").strip():
        return _resolve_name(core, turn, people, members)
    return resolution


def without_affixes(name: str) -> str:
    """``name`` without the titles and honorifics a persona addresses people with ("Master
    Sparrow", "sparrow-san", "スズメさん"): the name that is left, or ``name`` itself when nothing is."""
    core = name.strip().removeprefix("@").strip()
    core = _AFFIX_SUFFIX.sub("", _AFFIX_PREFIX.sub("", core)).strip()
    return core or name.strip().removeprefix("@").strip()


def _resolve_name(
    raw: str,
    turn: TurnContext,
    people: Mapping[str, Participant],
    members: MemberDirectory | None,
) -> TargetResolution:
    wanted = comparable_name(raw)
    if not wanted:
        return TargetResolution(TargetKind.NOT_FOUND)
    if wanted in {comparable_name(name) for name in turn.bot.names(turn.bot_name)}:
        return TargetResolution(TargetKind.BOT_SELF)
    # someone's own name, the speaker's first, wins over what a persona calls someone: a nickname
    # must never take a member's memory about themself
    for candidates in ([people[turn.user.user_id]] if turn.user.user_id in people else [], people.values()):
        people_named = _best_tier([p for p in candidates if not p.is_bridge], wanted, _participant_names)
        if people_named:
            resolution = _member_checked(_decide([_as_target(p) for p in people_named]), turn, members)
            if resolution.kind is not TargetKind.NOT_FOUND:
                return resolution  # one who has left the guild since: the next rungs may find a member
    nicknamed = {uid for uid, nick in turn.config.persona.nicknames if comparable_name(nick) == wanted}
    if len(nicknamed) == 1:
        return _nicknamed(nicknamed.pop(), raw, wanted, turn, people, members)
    if any(wanted in {comparable_name(n) for n in p.known_names()} for p in _other_bots(turn)):
        return TargetResolution(TargetKind.OTHER_BOT)
    if turn.guild_id is not None and members is not None:
        query = " ".join(raw.removeprefix("@").split())
        found = _matching_members(members.search(turn.guild_id, query), wanted, turn.bot.user_id)
        if found:
            return _decide(found)
    bridges = _best_tier([p for p in people.values() if p.is_bridge], wanted, _participant_names)
    if bridges:
        return _from_participants(bridges)
    return TargetResolution(TargetKind.NOT_FOUND)


def _nicknamed(
    user_id: str,
    raw: str,
    wanted: str,
    turn: TurnContext,
    people: Mapping[str, Participant],
    members: MemberDirectory | None,
) -> TargetResolution:
    """The member a persona's nickname names, unless another member is called that (their username
    or display name): their own name wins, and the search finds them (or says they are several)."""
    if turn.guild_id is not None and members is not None:
        query = " ".join(raw.removeprefix("@").split())
        found = _matching_members(members.search(turn.guild_id, query), wanted, turn.bot.user_id)
        if any(user.user_id != user_id for user in found):
            return _decide(found)
    return _resolve_id(user_id, turn, people, members)


def _participant_names(person: Participant) -> tuple[tuple[str | None, ...], tuple[str | None, ...]]:
    """A participant's names: primary (username, global name), then nickname (display name)."""
    return (person.username, person.global_name), (person.nickname, person.display_name)


def _best_tier(
    candidates: Iterable[T], wanted: str, names: Callable[[T], tuple[tuple[str | None, ...], ...]]
) -> list[T]:
    """The candidates named ``wanted`` on the best tier of their names that anyone matches."""
    candidates = list(candidates)
    tiers = max((len(names(candidate)) for candidate in candidates), default=0)
    for tier in range(tiers):
        matched = [
            candidate
            for candidate in candidates
            if wanted in {comparable_name(name) for name in names(candidate)[tier] if name}
        ]
        if matched:
            return matched
    return []


def _resolve_in_dm(raw: str, turn: TurnContext) -> TargetResolution:
    partner = turn.user
    if raw in {partner.user_id, f"<@{partner.user_id}>", f"<@!{partner.user_id}>"} or comparable_name(
        raw
    ) in {comparable_name(name) for name in partner.known_names()}:
        return TargetResolution(TargetKind.USER, _as_target(partner))
    if comparable_name(raw) in {comparable_name(name) for name in turn.bot.names(turn.bot_name)}:
        return TargetResolution(TargetKind.BOT_SELF)
    if raw in {turn.bot.user_id, f"<@{turn.bot.user_id}>", f"<@!{turn.bot.user_id}>"}:
        return TargetResolution(TargetKind.BOT_SELF)
    return TargetResolution(TargetKind.NOT_FOUND)


def _mentioned_id(raw: str, known_ids: set[str]) -> str | None:
    """The id of a mention, of a snowflake, or of a bare number that is a known id."""
    match = USER_MENTION.fullmatch(raw)
    if match:
        return match.group(1)
    return raw if _is_bare_id(raw) or raw in known_ids else None


def _is_bare_id(raw: str) -> bool:
    return is_snowflake(raw) and len(raw) >= MIN_BARE_ID_DIGITS


def _people_in_conversation(turn: TurnContext) -> dict[str, Participant]:
    people: dict[str, Participant] = {}
    for person in (turn.user, *turn.participants):
        if person.user_id != turn.bot.user_id and (person.is_bridge or not person.is_bot):
            people.setdefault(person.user_id, person)
    return people


def _resolve_id(
    user_id: str,
    turn: TurnContext,
    people: Mapping[str, Participant],
    members: MemberDirectory | None,
) -> TargetResolution:
    if user_id == turn.bot.user_id:
        return TargetResolution(TargetKind.BOT_SELF)
    person = people.get(user_id)
    if person is not None and person.is_bridge:
        return _from_participants([person])
    member = members.member(turn.guild_id, user_id) if members and turn.guild_id else None
    if member is None:
        return TargetResolution(TargetKind.NOT_FOUND)
    user = member.user
    if user is not None and user.bot:
        return TargetResolution(TargetKind.OTHER_BOT)
    if person is not None:
        return TargetResolution(TargetKind.USER, _as_target(person))
    username = user.username if user else ""
    display = member.nick or (user.global_name if user else None) or username or f"<@{user_id}>"
    return TargetResolution(
        TargetKind.USER, TargetUser(user_id=user_id, display_name=display, username=username)
    )


def _member_checked(
    resolution: TargetResolution, turn: TurnContext, members: MemberDirectory | None
) -> TargetResolution:
    """A person found by name in the conversation may have left the guild since they spoke."""
    if resolution.kind is not TargetKind.USER or resolution.user is None:
        return resolution
    if members is None or turn.guild_id is None:
        return TargetResolution(TargetKind.NOT_FOUND)
    if members.member(turn.guild_id, resolution.user.user_id) is None:
        return TargetResolution(TargetKind.NOT_FOUND)
    return resolution


def _other_bots(turn: TurnContext) -> list[Participant]:
    return [p for p in turn.participants if p.is_bot and not p.is_bridge and p.user_id != turn.bot.user_id]


def _from_participants(people: list[Participant]) -> TargetResolution:
    if len(people) == 1 and people[0].is_bridge:
        return TargetResolution(TargetKind.BRIDGE, _as_target(people[0]))
    return _decide([_as_target(person) for person in people])


def _as_target(person: Participant) -> TargetUser:
    return TargetUser(user_id=person.user_id, display_name=person.display_name, username=person.username)


def _decide(users: list[TargetUser]) -> TargetResolution:
    if not users:
        return TargetResolution(TargetKind.NOT_FOUND)
    if len(users) == 1:
        return TargetResolution(TargetKind.USER, users[0])
    labels = tuple(user.label() for user in users[:MAX_AMBIGUOUS_CANDIDATES])
    return TargetResolution(TargetKind.AMBIGUOUS, candidates=labels)


def _matching_members(members: Iterable[Member], wanted: str, bot_user_id: str) -> list[TargetUser]:
    """Non-bot members with a name equal to ``wanted`` (username, global name, nickname), on the best
    tier anyone matches: a username or global name wins over a nickname."""
    found: dict[str, tuple[TargetUser, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for member in members:
        user = member.user
        if user is None or user.bot or user.id == bot_user_id:
            continue
        username, nickname, global_name = user.username, member.nick or "", user.global_name or ""
        display = nickname or global_name or username
        target = TargetUser(user_id=user.id, display_name=display, username=username)
        found.setdefault(user.id, (target, ((username, global_name), (nickname,))))
    named = _best_tier(found.values(), wanted, lambda entry: entry[1])
    return [target for target, _ in named]
