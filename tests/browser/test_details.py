"""The chat page's details: search lists a chat once with its matching messages under it; a switch to
a text-only model with images attached keeps them and says so; an unknown agent in the address offers
the agents there are; an upload's id can be copied from its chip; a message sent while an approval
is open is held with plain words."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.browser.chat_page import (
    file_payload,
    message_box,
    open_as_guest,
    pick,
    png,
    send,
    wait_idle,
    wait_thumbnails,
)
from tests.browser.conftest import Site


def test_search_lists_a_chat_once_with_its_matches_under_it(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "the quokka smiles")
    wait_idle(page)
    send(page, "another quokka fact")
    wait_idle(page)
    page.get_by_role("searchbox", name="Search chats").fill("quokka")
    results = page.get_by_role("list", name="Search results")
    expect(results.locator("li.group")).to_have_count(1)  # one chat, listed once
    group = results.locator("li.group").first
    expect(group.locator(".title")).to_have_text("the quokka smiles")
    expect(group.locator(".facts")).to_contain_text("default")
    matches = group.get_by_role("list", name="Matches in the quokka smiles")
    expect(matches.get_by_role("button")).not_to_have_count(0)
    expect(matches).to_contain_text("another quokka fact")


def test_a_text_model_keeps_the_images_and_says_so(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("kept.png", png((20, 20))))
    wait_thumbnails(page, 1)
    page.get_by_label("Model").select_option(label="Local text (offline test model) (text)")
    hint = page.get_by_role("status").filter(has_text="does not support images")
    expect(hint).to_be_visible()
    expect(page.get_by_role("list", name="Attachments").get_by_role("listitem")).to_have_count(1)
    message_box(page).fill("send it anyway")
    message_box(page).press("Enter")
    expect(hint).to_be_visible()  # nothing sent that the model would refuse
    expect(message_box(page)).to_have_value("send it anyway")


def test_an_unknown_agent_offers_the_agents_there_are(page: Page, site: Site) -> None:
    open_as_guest(page, site.base, "/chat/no-such-agent")
    expect(page.get_by_role("alert")).to_contain_text('There is no agent "no-such-agent" here')
    picker = page.get_by_label("Agent")
    expect(picker).to_be_visible()
    picker.select_option(value="default")
    expect(page).to_have_url(f"{site.base}/chat/default")


def test_the_upload_id_is_on_the_page_and_a_message_waits_for_the_open_question(
    page: Page, site: Site
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_as_guest(page, site.base)
    with page.expect_response("**/api/files") as uploaded:
        pick(page, file_payload("doomed.png", png((20, 20))))
    wait_thumbnails(page, 1)
    page.get_by_role("button", name="Copy the upload id of doomed.png").click()  # what the tour uses
    upload_id = page.evaluate("() => navigator.clipboard.readText()")
    assert upload_id == uploaded.value.json()["id"]
    send(page, "use tool delete_attachment " + json.dumps({"uploadId": upload_id}))
    wait_idle(page)
    expect(page.get_by_role("region", name="Approval needed")).to_be_visible()
    send(page, "what about now?")
    expect(page.get_by_role("alert")).to_have_text("Answer the question above first: Approve or Deny.")
    expect(page.get_by_role("button", name="Approve")).to_be_focused()
