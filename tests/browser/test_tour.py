"""The README's tour on the defaults: with the default model and no admin step, ``count to <n>`` answers
slowly enough to press Stop, or to reload the page mid-answer and see the answer go on."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.chat_page import assistant_messages, open_as_guest, send, wait_idle
from tests.browser.conftest import Site


def test_stop_mid_answer_on_the_default_model(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "count to 120")
    expect(assistant_messages(page).last).to_contain_text(" 3 4")
    page.get_by_role("button", name="Stop").click()
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer).to_contain_text("Stopped")
    expect(answer).not_to_contain_text("119 120")


def test_reload_mid_answer_on_the_default_model(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "count to 16")
    expect(assistant_messages(page).last).to_contain_text(" 3 4")
    page.reload()
    expect(assistant_messages(page).last).to_contain_text("14 15 16", timeout=30_000)
    wait_idle(page)
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
