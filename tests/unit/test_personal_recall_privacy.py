"""Where a personal memory someone saved about themself may be recalled."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kioku.domain.ltm.memory import GLOBAL_LINEAGE, Memory, MemoryScope, RecallReach
from kioku.domain.privacy import Origin, Place, PrivacyPolicy, may_recall_personal

GUILD = "200000000000000001"
OTHER_GUILD = "200000000000000002"
CHANNEL = "300000000000000001"
THREAD = "300000000000000002"
ELSEWHERE = "300000000000000003"
DM = "500000000000000001"
SUBJECT = "400000000000000001"
SOMEONE_ELSE = "400000000000000002"

IN_PUBLIC_CHANNEL = Origin(GUILD, CHANNEL, private=False)
IN_PRIVATE_CHANNEL = Origin(GUILD, CHANNEL, private=True)
IN_DM = Origin.direct_message(DM)


@pytest.mark.parametrize(
    ("origin", "place", "recalled"),
    [
        (IN_PUBLIC_CHANNEL, Place(None, DM), True),
        (IN_PUBLIC_CHANNEL, Place(OTHER_GUILD, ELSEWHERE), True),
        (IN_DM, Place(GUILD, CHANNEL), True),
        (IN_DM, Place(None, DM), True),
        (IN_PRIVATE_CHANNEL, Place(GUILD, CHANNEL), True),
        (IN_PRIVATE_CHANNEL, Place(GUILD, THREAD, CHANNEL), True),
        (IN_PRIVATE_CHANNEL, Place(GUILD, ELSEWHERE), False),
        (IN_PRIVATE_CHANNEL, Place(OTHER_GUILD, ELSEWHERE), False),
        (IN_PRIVATE_CHANNEL, Place(None, DM), False),
    ],
    ids=[
        "public channel, in the DM",
        "public channel, in another guild",
        "DM, in a guild",
        "DM, in the DM",
        "private channel, in it",
        "private channel, in its thread",
        "private channel, in another channel",
        "private channel, in another guild",
        "private channel, in the DM",
    ],
)
def test_what_someone_said_about_themself_follows_them_unless_they_said_it_in_private(
    origin, place, recalled
):
    # Given a memory the subject saved about themself at origin
    # When a turn of theirs at place recalls their personal memories
    shown = may_recall_personal(
        origin, subject_id=SUBJECT, author_id=SUBJECT, place=place, policy=PrivacyPolicy(place.guild_id)
    )

    # Then only private memory stays in its channel and that channel's threads, even from their DM
    assert shown is recalled


@pytest.mark.parametrize(
    ("owner", "lineage", "shown"),
    [(SUBJECT, 7, True), (SUBJECT, GLOBAL_LINEAGE, True), (SUBJECT, 8, False), (SOMEONE_ELSE, 7, False)],
    ids=["a subject's", "a subject's global one", "another persona's", "not a subject's"],
)
def test_recall_reaches_the_personal_memories_of_its_subjects_in_its_lineage_alone(owner, lineage, shown):
    # Given a memory said in a public channel, and the reach of a turn in a DM whose subject is SUBJECT
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    memory = Memory(
        MemoryScope.personal(owner, lineage), "1", "likes tea", owner, moment, moment, IN_PUBLIC_CHANNEL
    )
    reach = RecallReach(Place(None, DM), PrivacyPolicy(), lineage=7, people=frozenset({SUBJECT}))

    # When / Then: what the inspector labels "in scope" and what the store's recall keeps agree by it
    assert reach.shows(memory) is shown
