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
LAYOUT_SCREENSHOTS_TO = "INSPECTOR_LAYOUT_SCREENSHOTS"
"""Set to a folder to keep the layout's screenshots at each width (inspector-800.png, …)."""
WIDTHS = (390, 800, 1366)
HEIGHT = 800


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
    resize(driver, 1280)
    try:
        yield driver
    finally:
        driver.quit()


def resize(driver, width: int) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
    )


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
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#messages li.answer button.component"))
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

    # Every reply offers "Why this answer?", and only replies (a memory notice does not); its
    # answer is the asker's, headed as Discord heads a message command's, and scrolled to
    notices = [
        m for m in browser.find_elements(By.CSS_SELECTOR, "#messages li.message") if "Memory" in m.text
    ]
    assert notices and all(not n.find_elements(By.CSS_SELECTOR, "button.why") for n in notices)
    why = browser.find_elements(By.CSS_SELECTOR, "#messages li.turn button.why")[-1]
    browser.execute_script("arguments[0].click()", why)
    wait.until(lambda _: any("What I was shown for this answer" in each.text for each in answers()))
    assert "Alice used Why this answer?" in answers()[-1].text
    wait.until(
        lambda _: browser.execute_script(
            "const list = document.getElementById('messages');"
            " return list.scrollHeight - list.scrollTop - list.clientHeight < 2"
        )
    )

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


def test_the_panes_fit_the_window_from_a_phone_to_a_laptop(browser, inspector_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT_SECONDS)
    keep = Path(os.environ.get(LAYOUT_SCREENSHOTS_TO) or tmp_path)

    # Given: a reply whose model request fills the right pane
    browser.get(inspector_url + "/")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#channels li[data-channel=general]"))
    browser.find_element(By.ID, "text").send_keys(
        "@kioku remember that the picnic is on saturday by the lake"
    )
    browser.find_element(By.ID, "send").click()
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#rounds .badge"))

    for width in WIDTHS:
        # When: the window is that wide
        resize(browser, width)
        browser.execute_script("window.scrollTo(0, 0)")

        # Then: nothing scrolls sideways, and every pane lies within the window's width
        fits = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth,"
            " ...['nav', '#conversation', 'aside'].map((pane) => {"
            "   const node = document.querySelector(pane), box = node.getBoundingClientRect();"
            "   return [pane, box.left, box.right, box.width, node.scrollWidth - node.clientWidth]; })]"
        )
        scroll_width, inner_width, *panes = fits
        assert inner_width == width
        assert scroll_width <= inner_width, f"the page scrolls sideways at {width} px"
        for pane, left, right, pane_width, overflow in panes:
            assert left >= 0 and right <= inner_width and pane_width > 0, (pane, left, right, width)
            assert overflow <= 0, f"{pane} scrolls sideways at {width} px"
        # And the right pane, brought into view, is seen from its top
        aside = browser.find_element(By.TAG_NAME, "aside")
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", aside)
        top = browser.execute_script("return arguments[0].getBoundingClientRect().top", aside)
        assert -1 < top < HEIGHT  # within a pixel: scrolling rounds
        assert aside.find_element(By.CSS_SELECTOR, "#rounds .badge").is_displayed()
        # And Send is whole within the window, beside the box you type in
        send = browser.find_element(By.ID, "send")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", send)
        left, right = browser.execute_script(
            "const box = arguments[0].getBoundingClientRect(); return [box.left, box.right]", send
        )
        assert left >= 0 and right <= inner_width, f"Send is cut at {width} px: {left}-{right}"
        browser.execute_script("window.scrollTo(0, 0)")
        screenshot = keep / f"inspector-{width}.png"
        assert browser.save_screenshot(str(screenshot))
        assert screenshot.stat().st_size > 10_000


def test_the_first_page_says_how_to_start_and_a_mistyped_command_is_answered_where_it_was_typed(
    browser, inspector_url, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT_SECONDS)
    keep = Path(os.environ.get(LAYOUT_SCREENSHOTS_TO) or tmp_path)

    def send(text: str) -> None:
        composer = browser.find_element(By.ID, "text")
        composer.clear()
        composer.send_keys(text)
        browser.find_element(By.ID, "send").click()

    def console() -> list[str]:
        return [line.text for line in browser.find_elements(By.CSS_SELECTOR, "#log li .line")]

    def composer_error():
        return browser.find_element(By.ID, "composer-error")

    # Given: the first page, nothing said yet
    browser.get(inspector_url + "/")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#channels li[data-channel=general]"))

    # Then: the empty conversation says how to start
    hint = wait.until(lambda _: browser.find_element(By.CSS_SELECTOR, "#messages li.hint"), "no hint")
    assert "@kioku" in hint.text and "/help stm" in hint.text
    assert browser.save_screenshot(str(keep / "inspector-first-page.png"))

    # When: a command is mistyped
    send("/server stm parameters refresh_cadance:3")

    # Then: its error shows under the composer, where it was typed, and the line is back to correct
    shown = wait.until(lambda _: composer_error().is_displayed() and composer_error(), "no error shown")
    assert "has no option 'refresh_cadance'" in shown.text
    assert (
        browser.find_element(By.ID, "text").get_attribute("value")
        == "/server stm parameters refresh_cadance:3"
    )
    assert browser.save_screenshot(str(keep / "inspector-mistyped.png"))

    # When: the line is corrected, then two more are run
    for logged, line in enumerate(("/server stm parameters refresh_cadence:3", ":wait 1h", ":janitor"), 2):
        send(line)
        wait.until(lambda _, logged=logged: len(console()) >= logged, f"{line} is not in the console")
        assert not composer_error().is_displayed()

    # Then: the console runs oldest first, like the conversation, scrolled to its newest line
    assert console() == [
        "> /server stm parameters refresh_cadance:3",
        "> /server stm parameters refresh_cadence:3",
        "> :wait 1h",
        "> :janitor",
    ]
    box = browser.find_element(By.ID, "console-log")
    wait.until(
        lambda _: browser.execute_script(
            "const box = arguments[0]; return box.scrollHeight - box.scrollTop - box.clientHeight < 2", box
        ),
        "the console is not scrolled to its newest line",
    )

    # And once something is said, the hint gives way to the conversation
    send("@kioku hello there")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#messages li.message.turn"), "no reply")
    assert not browser.find_elements(By.CSS_SELECTOR, "#messages li.hint")


def test_a_persona_with_an_avatar_shows_its_initial_and_the_page_loads_nothing_from_elsewhere(
    browser, inspector_url
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT_SECONDS)

    def send(text: str) -> None:
        browser.find_element(By.ID, "text").send_keys(text)
        browser.find_element(By.ID, "send").click()

    # Given Luna, whose avatar is on another host (the page's policy fetches nothing from there)
    browser.get(inspector_url + "/")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#channels li[data-channel=general]"))
    send('/persona add name:Luna prompt:"You are {bot}." avatar_url:https://example.com/luna.png')
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#log li"))
    # When she answers
    send("Luna, hello")
    wait.until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#messages li.turn .avatar"))
    # Then her avatar is her initial, never an image the page may not load (a broken one)
    avatar = browser.find_element(By.CSS_SELECTOR, "#messages li.turn .avatar")
    assert avatar.text == "L" and avatar.get_attribute("title") == "https://example.com/luna.png"
    assert browser.find_elements(By.CSS_SELECTOR, "#messages img") == []
    # ...and the short-term memory pane shows her row, named
    wait.until(lambda _: "luna's" in browser.find_element(By.ID, "stm-meta").text.casefold())
