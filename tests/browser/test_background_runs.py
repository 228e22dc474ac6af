"""Several chats at once on the chat page: an answer goes on while another chat is used, each chat has
its own Send and Stop, and a chat reopens on its own model, here and in another browser."""

from __future__ import annotations

from playwright.sync_api import Browser, Locator, Page, expect

from tests.browser.chat_page import assistant_messages, open_as_guest, send, wait_idle
from tests.browser.conftest import Site, patient

SLOW = "Slow vision (vision)"
LONG = " ".join(f"w{i}" for i in range(400))  # the slow model needs about 25 s for it


def chat_button(page: Page, title: str) -> Locator:
    sessions = page.get_by_role("navigation", name="Sessions")
    return sessions.get_by_role("button", name=title[:40], exact=False).first


def test_two_chats_answer_at_once_and_each_stops_alone(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label=SLOW)
    send(page, "first " + LONG)
    expect(assistant_messages(page).last).to_contain_text("w3")

    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()  # the other chat's run is not this one's
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    page.get_by_label("Model").select_option(label=SLOW)
    send(page, "second " + LONG)
    expect(assistant_messages(page).last).to_contain_text("w3")
    expect(page.locator("aside li.running")).not_to_have_count(0)  # the list marks the chats answering

    page.get_by_role("button", name="Stop").click()  # stops the second only
    wait_idle(page)
    second = assistant_messages(page).last
    expect(second).to_contain_text("Stopped")
    expect(second).not_to_contain_text("w399")

    chat_button(page, "first " + LONG).click()
    expect(page.get_by_role("button", name="Stop")).to_be_visible()  # still answering there
    expect(assistant_messages(page).last).to_contain_text("w20")  # the answer so far is shown again
    page.get_by_role("button", name="Stop").click()
    wait_idle(page)
    first = assistant_messages(page).last
    expect(first).to_contain_text("Stopped")
    expect(page.locator("aside li.running")).to_have_count(0)
    send(page, "and now a short one")  # the chat takes the next message
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("You said: and now a short one")


def test_a_chat_reopens_on_its_own_model_on_any_device(page: Page, site: Site, browser: Browser) -> None:
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label="Local text (offline test model) (text)")
    send(page, "a text chat")
    wait_idle(page)
    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_label("Model")).to_have_value(
        page.evaluate("() => document.querySelector('#model option').value")
    )
    send(page, "a vision chat")
    wait_idle(page)
    chat_button(page, "a text chat").click()
    expect(page.get_by_label("Model").locator("option:checked")).to_have_text(
        "Local text (offline test model) (text)"
    )
    chat_button(page, "a vision chat").click()
    expect(page.get_by_label("Model").locator("option:checked")).not_to_have_text(
        "Local text (offline test model) (text)"
    )
    # Changed without sending: stored with the chat all the same.
    page.get_by_label("Model").select_option(label=SLOW)
    page.wait_for_timeout(300)

    token = page.evaluate("() => localStorage.getItem('iris.token')")
    other = browser.new_context(viewport={"width": 1280, "height": 800})  # another device, same account
    patient(other)
    try:
        device = other.new_page()
        device.goto(site.base + "/")
        device.evaluate("(value) => localStorage.setItem('iris.token', value)", token)
        device.reload()
        expect(device.get_by_role("button", name="Sign out")).to_be_visible()
        chat_button(device, "a text chat").click()
        expect(device.get_by_label("Model").locator("option:checked")).to_have_text(
            "Local text (offline test model) (text)"
        )
        chat_button(device, "a vision chat").click()
        expect(device.get_by_label("Model").locator("option:checked")).to_have_text(SLOW)
    finally:
        other.close()
