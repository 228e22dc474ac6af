"""The chat page at a phone's size (390 by 844) and at a desktop's (1280 by 800): no horizontal overflow, Send
in view, the sidebar a drawer behind "Chats" on the phone; and the colours following the system's dark
mode, or the switch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from tests.browser.chat_page import assistant_messages, open_as_guest, send, wait_idle
from tests.browser.conftest import Site, patient

PHONE: ViewportSize = {"width": 390, "height": 844}


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    patient(context)
    try:
        yield context.new_page()
    finally:
        context.close()


def overflow(page: Page) -> int:
    """How far the page is wider than the window (0: it fits)."""
    width: int = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    return width


def in_view(page: Page, name: str) -> bool:
    box = page.get_by_role("button", name=name, exact=True).bounding_box()
    size = page.viewport_size
    assert box is not None
    assert size is not None
    return (
        box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
        and box["y"] + box["height"] <= size["height"]
    )


def test_a_phone_chats_without_sideways_scrolling(phone: Page, site: Site) -> None:
    open_as_guest(phone, site.base)
    assert overflow(phone) <= 0
    assert in_view(phone, "Send")
    sidebar = phone.get_by_role("complementary", name="Chats")
    expect(sidebar).to_be_hidden()  # a drawer, closed
    send(phone, "a long message " * 30)
    wait_idle(phone)
    expect(assistant_messages(phone).last).to_contain_text("You said: a long message")
    assert overflow(phone) <= 0
    assert in_view(phone, "Send")

    phone.get_by_role("button", name="Chats", exact=True).click()
    expect(sidebar).to_be_visible()
    expect(phone.get_by_role("button", name="Chats", exact=True)).to_have_attribute("aria-expanded", "true")
    assert overflow(phone) <= 0
    phone.get_by_role("button", name="New chat").click()  # choosing closes the drawer
    expect(sidebar).to_be_hidden()
    expect(phone.get_by_text("What can I help with?")).to_be_visible()
    phone.get_by_role("button", name="Chats", exact=True).click()
    phone.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()


def test_the_desktop_keeps_the_sidebar_open(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    expect(page.get_by_role("complementary", name="Chats")).to_be_visible()
    expect(page.get_by_role("button", name="Chats", exact=True)).to_be_hidden()
    assert overflow(page) <= 0
    assert in_view(page, "Send")


def background(page: Page) -> str:
    colour: str = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    return colour


def test_dark_mode_follows_the_system_and_the_switch(page: Page, site: Site) -> None:
    page.emulate_media(color_scheme="light")
    open_as_guest(page, site.base)
    light = background(page)
    page.emulate_media(color_scheme="dark")
    expect(page.locator("body")).not_to_have_css("background-color", light)
    dark = background(page)
    assert dark != light
    switch = page.get_by_role("button", name="Theme: auto")
    switch.click()  # auto → light, whatever the system says
    expect(page.locator("body")).to_have_css("background-color", light)
    page.reload()  # the choice is kept
    expect(page.locator("body")).to_have_css("background-color", light)
    page.get_by_role("button", name="Theme: light").click()  # light → dark
    expect(page.locator("body")).to_have_css("background-color", dark)
    page.get_by_role("button", name="Theme: dark").click()  # dark → auto: the system's again
    expect(page.locator("body")).to_have_css("background-color", dark)


def test_dark_mode_on_a_phone(phone: Page, site: Site) -> None:
    phone.emulate_media(color_scheme="dark")
    open_as_guest(phone, site.base)
    send(phone, "hello in the dark")
    wait_idle(phone)
    assert background(phone) != "rgb(245, 246, 248)"
    assert overflow(phone) <= 0
