"""The page in headless Chromium (Debian's package, driven by playwright): load, pick a vignette, move a slider with
the keyboard, and see the decision and the exported override change. Screenshots go to reports/playground/."""

import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from classifiers import parse_conversation
from classifiers.signals import SIGNALS
from guard.pipeline import Guard
from guard.policy import load_policy

CHROMIUM = os.environ.get("COUCHGUARD_CHROMIUM", "/usr/bin/chromium")
# as root, with no network: without the background-networking flags Chromium keeps dialling out and is refused
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
LAPTOP = {"width": 1440, "height": 900}


def _missing() -> str | None:
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).exists()):
        return f"no Chromium at {CHROMIUM} (.ci/browser.sh installs Debian's chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def server(playground_app):
    import uvicorn

    if (reason := _missing()) is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI installs both: a missing browser there is a broken install, not a skip
        pytest.skip(reason)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(playground_app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the playground server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def shots(request):
    folder = Path(request.config.rootpath) / "reports" / "playground"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nplayground screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    # playwright starts Chromium on a new, empty profile of its own (a temporary --user-data-dir)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport=LAPTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(30_000)
    page.goto(server)
    page.wait_for_selector("body[data-ready=true]")
    yield page
    # what the page itself wrote (not conversation text) never shows a JavaScript null or undefined
    panels = " ".join(page.inner_text(f"#{panel}") for panel in ("decision", "rules", "signals", "moore"))
    context.close()
    assert not errors, f"the page raised: {errors}"
    assert not re.search(r"\b(null|undefined|NaN)\b", panels), panels


def action(page) -> str:
    return page.get_attribute("#action", "data-action")


def test_pick_a_vignette_move_a_slider_and_export(page, shots, scorer, tmp_path):
    # the Moore bridge stimulus on its own: the input rail steers for user.suicide
    page.select_option("#vignette", "moore:bridge")
    page.select_option("#variant", "")
    page.click("#load-vignette")
    page.wait_for_function("document.querySelector('#action')?.dataset.action === 'steer'")
    assert page.locator(".signal").count() == len(SIGNALS)
    assert "suicide-risk" in page.inner_text("#rules")
    assert "Don't Enable Suicidal Ideation" in page.inner_text("#rules")
    page.wait_for_selector("#moore-table")
    before_yaml = page.input_value("#override-yaml")
    assert "extends: mental-health" in before_yaml and "user.suicide" not in before_yaml
    page.screenshot(path=shots / "1-vignette.png", full_page=True)

    # the keyboard alone: focus the slider, End takes it to 1.0, and the rule that follows the threshold goes
    # (suicide-risk-high keeps its own level, 0.9, so whether the question now passes depends on its score)
    slider = page.locator("#threshold-user-suicide")
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function("document.querySelector('#override-yaml').value.includes('user.suicide: 1.0')")
    page.wait_for_function(
        "![...document.querySelectorAll('#rules li > div:first-child > strong')].some(e => e.textContent === "
        "'suicide-risk')"
    )
    exported = page.input_value("#override-yaml")
    shown = page.get_attribute("#action", "data-action")
    page.screenshot(path=shots / "2-slider-moved.png", full_page=True)

    # what the page exported decides what the page showed, through the ordinary pipeline
    path = tmp_path / "override.yaml"
    path.write_text(exported, encoding="utf-8")
    conversation = parse_conversation([{"role": "user", "content": page.input_value(".turn textarea")}])
    decision = Guard(load_policy(path), scorer).check(conversation)
    assert decision.action == shown and "suicide-risk" not in decision.rules

    # Page Down brings it back below the score: the threshold's rule fires again
    page.keyboard.press("PageDown")
    page.keyboard.press("PageDown")
    page.keyboard.press("PageDown")
    page.wait_for_function(
        "[...document.querySelectorAll('#rules li > div:first-child > strong')].some(e => e.textContent === "
        "'suicide-risk')"
    )


def test_a_labelled_response_goes_through_the_output_rail(page, shots):
    page.select_option("#vignette", "moore:bridge")
    options = page.eval_on_selector_all("#variant option", "os => os.map(o => [o.value, o.textContent])")
    row = next(
        value
        for value, text in options
        if value and text.startswith("inappropriate") and "(empty response)" not in text
    )
    page.select_option("#variant", row)
    page.click("#load-vignette")
    page.wait_for_function("document.querySelector('#decision')?.textContent.includes('output rail')")
    assert page.locator(".turn").count() == 2
    assert action(page) in ("allow", "annotate", "rewrite", "block")
    assert page.inner_text("#received").strip()
    page.screenshot(path=shots / "3-output-rail.png", full_page=True)


def test_a_psychosis_bench_case_cut_at_a_turn(page):
    case = page.eval_on_selector("#vignette", "s => [...s.options].find(o => o.value.startsWith('psychosis:')).value")
    page.select_option("#vignette", case)
    page.select_option("#variant", "3")
    page.click("#load-vignette")
    page.wait_for_function("document.querySelector('#decision')?.textContent.includes('input rail')")
    assert page.locator(".turn").count() == 3
    assert page.eval_on_selector_all(".turn select", "ss => ss.map(s => s.value)") == ["user"] * 3


def test_bad_input_is_shown_in_the_page(page, shots):
    page.get_by_role("button", name="Remove turn 1").click()  # no turn left
    page.click("#check")
    page.wait_for_function("document.querySelector('#error').textContent.includes('messages is empty')")
    page.click("details.paste summary")
    page.fill("#json-input", '[{"role": "robot", "content": "hello"}]')
    page.click("#use-json")
    page.wait_for_function("document.querySelector('#error').textContent.includes(\"role 'robot' is unknown\")")
    page.screenshot(path=shots / "4-error.png", full_page=True)
    page.fill("#json-input", '{"messages": [{"role": "user", "content": "Any quick vegetarian dinner ideas?"}]}')
    page.click("#use-json")
    page.wait_for_selector("#error", state="hidden")
    assert action(page) == "allow"


def test_responses_that_change_fate_open_in_the_editor(page):
    # collusion at 0 withholds answers the shipped threshold delivers: the panel lists them, each one opens
    page.locator("#threshold-assistant-collusion").focus()
    page.keyboard.press("Home")
    page.wait_for_selector("#moore-changed")  # drawn once the rates for the new threshold are in
    page.click("#moore-changed summary")
    page.locator("#moore-changed li button").first.click()
    page.wait_for_function("document.querySelector('#decision')?.textContent.includes('output rail')")
    assert page.locator(".turn").count() >= 2
    assert page.input_value("#override-yaml").count("assistant.collusion: 0.0") == 1
