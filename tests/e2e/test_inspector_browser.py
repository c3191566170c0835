"""The web inspector in a real headless browser: Debian's chromium, driven by Selenium with the
system's chromedriver (nothing is downloaded). Skipped when no browser is installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WAIT_SECONDS = 60
SCREENSHOT_TO = "INSPECTOR_SCREENSHOT"
"""Set to a path to keep the screenshot of a review with its buttons (docs/img/inspector.png is
made this way)."""


@pytest.fixture
def browser(monkeypatch):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the dev extra)")
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(
            "no headless browser: apt-get install chromium chromium-driver to run the inspector's browser test"
        )
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must not fetch a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_shows_a_reply_with_its_labelled_model_request(browser, inspector_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT_SECONDS)

    def replies() -> list:
        return browser.find_elements(By.CSS_SELECTOR, "#messages li.message.turn")

    def send(text: str, *, replies_expected: int | None = None, logged: int | None = None) -> None:
        composer = browser.find_element(By.ID, "text")
        composer.send_keys(text)
        browser.find_element(By.ID, "send").click()
        if replies_expected is not None:
            wait.until(lambda _: len(replies()) >= replies_expected)
        if logged is not None:
            wait.until(lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#log li")) >= logged)

    def badges() -> list[str]:
        return [badge.text for badge in browser.find_elements(By.CSS_SELECTOR, "#rounds .badge")]

    # Given: the page, and a cadence of 2 so the third turn carries the reminder
    browser.get(inspector_url + "/")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#channels li[data-channel=general]"))
    send("/server stm parameters refresh_cadence:2", logged=1)

    # When: four turns in #general through the composer
    send("@kioku remember that the picnic is on saturday by the lake", replies_expected=1)
    send("@kioku who brings drinks?", replies_expected=2)
    send("@kioku I bring sandwiches", replies_expected=3)
    send("@kioku and Bob brings lemonade", replies_expected=4)

    # Then: the newest reply is selected, its request shows both memories, the dialogue and its depths
    wait.until(lambda _: "short-term memory" in badges())
    shown = badges()
    assert {"system", "long-term memory", "short-term memory", "dialogue"} <= set(shown)
    assert "nudge" not in shown
    depths = [depth.text for depth in browser.find_elements(By.CSS_SELECTOR, "#rounds .depth")]
    assert "depth 0" in depths
    assert "lemonade" in browser.find_element(By.CSS_SELECTOR, "#rounds .msg.kind-dialogue:last-of-type").text
    assert browser.find_element(By.CSS_SELECTOR, "#stm .block").text, "the summary the nudge asked for"
    assert "picnic" in browser.find_element(By.ID, "ltm").text

    # And the third reply's turn carried the nudge, answered in a second request
    replies()[2].click()
    wait.until(lambda _: "nudge" in badges())
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rounds .round")) == 2
    tools = browser.find_element(By.CSS_SELECTOR, "#rounds details.tools")
    tools.find_element(By.TAG_NAME, "summary").click()
    assert "update_short_term_memory" in tools.text

    browser.execute_script("document.querySelector('aside').scrollTop = 0")
    screenshot = tmp_path / "inspector.png"
    assert browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000


def test_answers_buttons_forms_and_the_speaker_behave_as_in_discord(browser, inspector_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(browser, WAIT_SECONDS)

    def answers() -> list:
        return browser.find_elements(By.CSS_SELECTOR, "#messages li.message.answer")

    def conversation() -> str:
        return browser.find_element(By.ID, "messages").text

    def send(text: str) -> None:
        browser.find_element(By.ID, "text").send_keys(text)
        browser.find_element(By.ID, "send").click()

    def speak_as(key: str) -> None:
        Select(browser.find_element(By.ID, "member")).select_by_value(key)

    browser.get(inspector_url + "/")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#channels li[data-channel=general]"))

    # A form opens as a form: filled in and submitted, its answer is shown inline, only to its asker
    send("/persona edit")
    wait.until(lambda _: browser.find_element(By.ID, "form").is_displayed())
    name = browser.find_element(By.ID, "field-name")
    assert name.get_attribute("value") == "Kioku"
    name.clear()
    name.send_keys("Mimi")
    browser.find_element(By.ID, "field-prompt").send_keys("You are {bot}, a librarian.")
    browser.find_element(By.ID, "form-submit").click()
    wait.until(lambda _: "Saved: the persona" in conversation())
    saved = answers()[-1]
    assert "Only you can see this" in saved.text and "Alice used :submit" in saved.text
    assert "Mimi" in saved.text and not browser.find_element(By.ID, "form").is_displayed()

    # Buttons are buttons: bob's memory waits for review, alice approves it with a click
    send("/server memories moderation mode:approval")
    wait.until(lambda _: "Saved: memory moderation is approval" in conversation())
    speak_as("bob")
    wait.until(lambda _: "Saved: the persona" not in conversation())  # alice's answers are hers alone
    send("@kioku remember that the book club meets on Fridays")
    wait.until(lambda _: "awaits a manager's review" in conversation())
    speak_as("alice")
    send("/server memories review")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#messages button.component"))
    review = answers()[-1]
    assert "<@" not in review.text and "<#" not in review.text  # mentions are shown as names
    approve = next(b for b in review.find_elements(By.CSS_SELECTOR, "button") if b.text.startswith("Approve"))
    browser.execute_script("arguments[0].scrollIntoView({block: 'end'})", review)
    screenshot = tmp_path / "answers.png"
    assert browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000
    if os.environ.get(SCREENSHOT_TO):
        shutil.copyfile(screenshot, Path(os.environ[SCREENSHOT_TO]))
    approve.click()
    wait.until(lambda _: "Approved server memory" in conversation())

    # /chat's answer is in the conversation
    send("/chat message:hello there")
    wait.until(lambda _: 'said: "hello there"' in conversation())

    # The speaker changes only when you change it: bob's DM is bob's, and alice stays alice
    browser.find_element(By.CSS_SELECTOR, "#dms li[data-channel=dm-bob]").click()
    wait.until(lambda _: browser.find_element(By.ID, "text").get_attribute("disabled"))
    assert (
        Select(browser.find_element(By.ID, "member")).first_selected_option.get_attribute("value") == "alice"
    )
    assert "speak as Bobby" in browser.find_element(By.ID, "text").get_attribute("placeholder")
    browser.find_element(By.CSS_SELECTOR, "#channels li[data-channel=general]").click()
    wait.until(lambda _: not browser.find_element(By.ID, "text").get_attribute("disabled"))
    assert (
        Select(browser.find_element(By.ID, "member")).first_selected_option.get_attribute("value") == "alice"
    )
