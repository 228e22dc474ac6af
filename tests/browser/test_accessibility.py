"""Accessibility of the chat page: an axe-core scan of the main views (signed out, a chat, dark, the
phone drawer, the image preview) finds nothing serious or critical; the preview keeps the keyboard and
gives it back on Esc; the version buttons are big enough to hit; a finished answer is announced once
(the message list is not a live region re-read per token), and an answer's image is fetched once.
axe-core is loaded from node_modules by path at test time: the app never serves it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Request, expect

from tests.browser.chat_page import (
    AXE,
    assistant_messages,
    file_payload,
    open_as_guest,
    pick,
    png,
    send,
    serious,
    wait_idle,
    wait_thumbnails,
)
from tests.browser.conftest import Site


@pytest.mark.skipif(not AXE.exists(), reason="node_modules/axe-core is not installed")
def test_axe_finds_nothing_serious_on_the_main_views(page: Page, site: Site) -> None:
    page.goto(site.base + "/")
    expect(page.get_by_role("button", name="Continue as guest")).to_be_visible()
    assert serious(page) == [], "signed out"
    open_as_guest(page, site.base)
    pick(page, file_payload("dot.png", png((40, 30))))
    wait_thumbnails(page, 1)
    send(page, "code:\n```python\nprint('hi')\n```\n| a | b |\n|---|---|\n| 1 | 2 |")
    wait_idle(page)
    assistant_messages(page).last.get_by_role("button", name="Regenerate").click()
    wait_idle(page)
    assert serious(page) == [], "a chat, light"
    page.emulate_media(color_scheme="dark")
    assert serious(page) == [], "a chat, dark"
    page.get_by_role("button", name="Enlarge image dot.png").first.click()
    assert serious(page) == [], "the image preview"
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("button", name="Chats", exact=True).click()
    assert serious(page) == [], "the phone drawer, dark"


def test_the_preview_keeps_the_keyboard_and_gives_it_back(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("big.png", png((64, 48))))
    wait_thumbnails(page, 1)
    send(page, "look")
    wait_idle(page)
    opener = page.get_by_role("button", name="Enlarge image big.png").first
    opener.focus()
    page.keyboard.press("Enter")
    preview = page.get_by_role("dialog", name="Image preview")
    expect(preview).to_be_visible()
    close = preview.get_by_role("button", name="Close preview")
    expect(close).to_be_focused()
    for key in ("Tab", "Shift+Tab", "Tab"):
        page.keyboard.press(key)
        expect(close).to_be_focused()  # the keyboard stays in the dialog
    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
    expect(opener).to_be_focused()  # and comes back to what opened it


def test_versions_are_big_enough_and_the_answer_is_announced_once(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    assert page.get_by_role("list", name="Messages").get_attribute("aria-live") is None
    send(page, "announce me")
    wait_idle(page)
    expect(page.get_by_role("status").filter(has_text="Answer finished")).to_contain_text(
        "You said: announce me"
    )
    assistant_messages(page).last.get_by_role("button", name="Regenerate").click()
    wait_idle(page)
    for name in ("Previous version", "Next version"):
        box = page.get_by_role("button", name=name).bounding_box()
        assert box is not None
        assert (box["width"], box["height"]) >= (24, 24), (name, box)
        assert box["height"] >= 24, (name, box)
    page.get_by_role("button", name="Previous version").focus()
    page.keyboard.press("Tab")  # the keyboard moves on: the control it lands on shows a ring
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", "")


def test_an_answers_image_is_fetched_once(page: Page, site: Site) -> None:
    probe = "/static/chat/favicon.svg?probe=answer"
    fetched: list[str] = []

    def seen(request: Request) -> None:
        if "probe=answer" in request.url:
            fetched.append(request.url)

    page.on("request", seen)
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label="Slow vision (vision)")
    send(page, f"![probe]({probe}) " + " ".join(f"w{i}" for i in range(30)))
    expect(assistant_messages(page).last).to_contain_text("w29")
    wait_idle(page)
    assert len(fetched) == 1, fetched
