"""What a manager curating server memories may read where: never what they might not see in Discord."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kioku.domain.ltm.curation import text_shown_to_manager
from kioku.domain.ltm.memory import Memory, MemoryScope, MemoryStatus
from kioku.domain.privacy import Origin, Place, PrivacyMode, PrivacyPolicy

GUILD, OTHER_GUILD = "900", "901"
GENERAL, SECRET, THREAD_OF_SECRET, PRIVATE_THREAD = "100", "200", "250", "260"
IN_GENERAL = Place(GUILD, GENERAL)
IN_SECRET = Place(GUILD, SECRET)
IN_THREAD_OF_SECRET = Place(GUILD, THREAD_OF_SECRET, SECRET)
NOW = datetime(2025, 5, 1, tzinfo=UTC)


def memory(origin: Origin, status: MemoryStatus = MemoryStatus.ACTIVE) -> Memory:
    return Memory(
        MemoryScope.server(GUILD, 1), "12345", "the vault code is okapi", "7", NOW, NOW, origin, status=status
    )


def shown(origin: Origin, place: Place, policy: PrivacyPolicy | None = None, *, admin: bool = False) -> bool:
    return text_shown_to_manager(
        memory(origin), place, policy or PrivacyPolicy(GUILD), sees_every_channel=admin
    )


PUBLIC = Origin(GUILD, GENERAL, private=False)
PRIVATE = Origin(GUILD, SECRET, private=True)


def test_what_was_said_in_public_is_readable_anywhere_in_the_server():
    assert shown(PUBLIC, IN_SECRET)
    assert shown(PUBLIC, IN_THREAD_OF_SECRET)


@pytest.mark.parametrize(
    ("place", "readable"),
    [
        (IN_SECRET, True),
        (IN_THREAD_OF_SECRET, True),
        (IN_GENERAL, False),
        (Place(GUILD, "300", GENERAL), False),
    ],
    ids=["its channel", "a thread of it", "another channel", "a thread elsewhere"],
)
def test_what_was_said_in_private_is_readable_only_in_that_channel_and_its_threads(place, readable):
    assert shown(PRIVATE, place) is readable
    assert shown(PRIVATE, place, admin=True) is readable


def test_the_bypass_lets_the_bot_recall_private_memory_elsewhere_but_not_a_manager_read_it():
    assert not shown(PRIVATE, IN_GENERAL, PrivacyPolicy(GUILD, bypass=True))


def test_overrides_decide_as_they_do_for_recall():
    make_private = PrivacyPolicy(GUILD, {GENERAL: PrivacyMode.PRIVATE})
    make_public = PrivacyPolicy(GUILD, {SECRET: PrivacyMode.PUBLIC})

    assert not shown(PUBLIC, IN_SECRET, make_private)
    assert shown(PUBLIC, Place(GUILD, "310", GENERAL), make_private)
    assert shown(PRIVATE, IN_GENERAL, make_public)


def test_a_private_thread_is_readable_only_inside_it():
    origin = Origin(GUILD, PRIVATE_THREAD, SECRET, private=True, private_thread=True)

    assert shown(origin, Place(GUILD, PRIVATE_THREAD, SECRET))
    assert not shown(origin, IN_SECRET)
    assert not shown(origin, IN_SECRET, PrivacyPolicy(GUILD, {SECRET: PrivacyMode.PUBLIC}))


def test_a_memory_stored_before_origins_is_readable_only_by_who_sees_every_channel():
    assert not shown(Origin.unknown(), IN_GENERAL)
    assert shown(Origin.unknown(), IN_GENERAL, admin=True)


def test_another_servers_origin_is_never_readable():
    assert not shown(Origin(OTHER_GUILD, GENERAL, private=False), IN_GENERAL, admin=True)


def test_a_pending_memory_is_readable_where_it_would_be_recalled_once_approved():
    pending = memory(PRIVATE, MemoryStatus.PENDING)

    assert text_shown_to_manager(pending, IN_SECRET, PrivacyPolicy(GUILD), sees_every_channel=False)
    assert not text_shown_to_manager(pending, IN_GENERAL, PrivacyPolicy(GUILD), sees_every_channel=True)
