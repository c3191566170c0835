"""``/personal stm`` on a fake command context: one's own memory settings, shown and saved."""

from __future__ import annotations

from kioku.domain.models import PrivacyLevel, UserProfile
from kioku.services.commands.error_replies import Refusal
from tests.unit.command_fakes import ALICE, FakeCommandContext, answer, command, embed


def test_with_no_option_the_settings_are_shown_and_nothing_is_saved():
    context = FakeCommandContext()
    reply = answer(command("personal", "stm"), context)
    assert embed(reply)["title"] == "Your memory settings"
    assert context.config_store.saves == 0


def test_a_change_is_saved_on_the_askers_own_profile():
    context = FakeCommandContext()
    reply = answer(command("personal", "stm", {"privacy": "full", "cross_server": True}), context)
    assert embed(reply)["title"] == "Your memory settings, saved"
    assert context.config_store.profiles == {
        ALICE: UserProfile(ALICE, privacy_level=PrivacyLevel.FULL, cross_server_opt_in=True, version=1)
    }


def test_asking_for_what_is_already_so_saves_nothing():
    context = FakeCommandContext()
    context.config_store.profiles[ALICE] = UserProfile(ALICE, privacy_level=PrivacyLevel.PARTIAL, version=3)
    reply = answer(command("personal", "stm", {"privacy": "partial"}), context)
    assert embed(reply)["title"] == "Your memory settings (already so)"
    assert context.config_store.saves == 0


def test_an_unknown_privacy_level_is_refused():
    context = FakeCommandContext()
    reply = answer(command("personal", "stm", {"privacy": "total"}), context)
    assert embed(reply)["title"] == Refusal.NOTHING_CHANGED
    assert "none, partial or full" in embed(reply)["description"]
    assert context.config_store.profiles == {}


def test_an_unknown_subcommand_points_to_the_ones_there_are():
    reply = answer(command("personal", "nonsense"), FakeCommandContext())
    assert embed(reply)["title"] == Refusal.NOT_UNDERSTOOD
    assert "/personal stm" in embed(reply)["description"]
