"""The composer (seed 002 §3.1): picker, paste and drop uploads, the 4-image cap, server refusals,
vision gating by model type, thumbnails with remove, and the image preview."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from tests.browser.chat_page import (
    assistant_messages,
    drop,
    file_payload,
    open_as_guest,
    paste,
    pick,
    png,
    send,
    user_messages,
    wait_idle,
    wait_thumbnails,
)
from tests.browser.conftest import Site
from tests.support.images import image_bytes
from tests.support.waits import REQUEST_SECONDS

GREEN = (30, 160, 60)


def test_picker_upload_then_send_names_the_image_size(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("wide.png", png((123, 45), GREEN)))
    wait_thumbnails(page, 1)
    send(page, "what is this?")
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer).to_contain_text("Image 1: PNG, 123x45 pixels")
    expect(answer).to_contain_text("green")
    expect(answer).to_contain_text(re.compile(r"Usage: local/vision · \d+ in · \d+ out"))
    expect(user_messages(page).last.get_by_role("img", name="wide.png")).to_be_visible()


def test_a_pasted_image_is_uploaded_and_sent(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    paste(page, ("pasted.png", png((31, 17))))
    wait_thumbnails(page, 1)
    send(page, "pasted")
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("31x17 pixels")


def test_a_dropped_image_is_uploaded_and_sent(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    drop(page, ("dropped.png", png((29, 13))))
    wait_thumbnails(page, 1)
    send(page, "dropped")
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("29x13 pixels")


def test_a_fifth_image_is_refused_and_the_entry_points_disable(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, *(file_payload(f"i{n}.png", png((10 + n, 10))) for n in range(4)))
    wait_thumbnails(page, 4)
    expect(page.get_by_label("Attach images")).to_be_disabled()
    paste(page, ("fifth.png", png((15, 15))))
    drop(page, ("sixth.png", png((16, 16))))
    expect(page.get_by_role("status").filter(has_text="At most 4 images")).to_be_visible()
    wait_thumbnails(page, 4)
    page.get_by_role("button", name="Remove i0.png").click()
    expect(page.get_by_label("Attach images")).to_be_enabled()
    wait_thumbnails(page, 3)


def test_a_gif_is_refused_with_the_servers_detail(page: Page, site: Site) -> None:
    gif = image_bytes("GIF", (8, 8))
    guest = httpx.post(f"{site.base}/api/auth/guest", timeout=REQUEST_SECONDS).json()["accessToken"]
    refused = httpx.post(
        f"{site.base}/api/files",
        files={"file": ("anim.gif", gif, "image/gif")},
        data={"threadId": "0190f3c0-0000-7000-8000-0000000000aa"},
        headers={"Authorization": f"Bearer {guest}"},
        timeout=REQUEST_SECONDS,
    )
    assert refused.status_code == 415
    detail, code = refused.json()["detail"], refused.json()["code"]

    open_as_guest(page, site.base)
    pick(page, file_payload("anim.gif", gif, "image/gif"))  # the picker's `accept` is only a hint
    expect(page.get_by_role("alert")).to_have_text(f"{detail} ({code})")
    attachments = page.get_by_role("list", name="Attachments")
    expect(attachments.get_by_text(detail)).to_be_visible()
    expect(attachments.get_by_role("img")).to_have_count(0)


def test_a_text_model_hides_the_upload_button_and_ignores_a_paste(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    expect(page.get_by_label("Attach images")).to_be_visible()
    page.get_by_label("Model").select_option(label="Local text (offline test model) (text)")
    expect(page.get_by_label("Attach images")).to_be_hidden()
    expect(page.get_by_text("reads text only")).to_be_visible()
    paste(page, ("ignored.png", png((12, 12))))
    expect(page.get_by_text("The pasted image was ignored")).to_be_visible()
    expect(page.get_by_role("list", name="Attachments").get_by_role("listitem")).to_have_count(0)
    send(page, "just words")
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("You said: just words")


def test_a_thumbnail_removed_before_sending_is_not_sent(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("keep.png", png((40, 20))), file_payload("drop.png", png((60, 30))))
    wait_thumbnails(page, 2)
    page.get_by_role("button", name="Remove drop.png").click()
    wait_thumbnails(page, 1)
    send(page, "one image")
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer).to_contain_text("Image 1: PNG, 40x20 pixels")
    expect(answer).not_to_contain_text("Image 2")
    expect(answer).not_to_contain_text("60x30")


def test_an_image_in_history_opens_a_preview_that_escape_closes(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("look.png", png((50, 40))))
    wait_thumbnails(page, 1)
    send(page, "look")
    wait_idle(page)
    page.get_by_role("button", name="Enlarge image look.png").click()
    preview = page.get_by_role("dialog", name="Image preview")
    expect(preview).to_be_visible()
    expect(preview.get_by_role("img", name="look.png")).to_be_visible()
    natural = preview.get_by_role("img").evaluate("(img) => img.naturalWidth")
    assert natural == 50  # the signed URL really loaded the image
    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
