"""A conversation on the chat page: sign-in, sessions, edit, regenerate, stop, reload mid-answer and
approval interrupts — each proved against what the server stored."""

from __future__ import annotations

import json

import httpx
from playwright.sync_api import Page, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import (
    assistant_messages,
    file_payload,
    open_as_guest,
    pick,
    png,
    send,
    user_messages,
    wait_idle,
    wait_thumbnails,
)
from tests.browser.conftest import JWT_SECRET, Site
from tests.support.agents import offer_sync
from tests.support.waits import REQUEST_SECONDS

SLOW = "Slow vision (vision)"
WORDS = " ".join(f"w{i}" for i in range(40))


def test_guest_sign_in(page: Page, site: Site) -> None:
    page.goto(site.base + "/")
    expect(page.get_by_role("region", name="Sign in")).to_be_visible()
    page.get_by_role("button", name="Continue as guest").click()
    expect(page.get_by_text("Signed in as a guest")).to_be_visible()
    token = page.evaluate("() => localStorage.getItem('iris.token')")
    claims = httpx.get(
        f"{site.base}/api/agents/default/sessions",
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_SECONDS,
    )
    assert claims.status_code == 200  # the kept token is a working bearer token


def test_a_pasted_token_signs_in_and_a_bad_one_shows_the_problem(page: Page, site: Site) -> None:
    refused = httpx.get(
        f"{site.base}/api/agents/default/sessions",
        headers={"Authorization": "Bearer not-a-jwt"},
        timeout=REQUEST_SECONDS,
    )
    problem = refused.json()
    page.goto(site.base + "/chat/default")
    page.get_by_label("Access token").fill("not-a-jwt")
    page.get_by_role("button", name="Use token").click()
    # the API's own detail and code, not a generic error; and the sign-in stays offered
    expect(page.get_by_role("alert")).to_have_text(f"{problem['detail']} ({problem['code']})")
    expect(page.get_by_role("region", name="Sign in")).to_be_visible()
    page.get_by_label("Access token").fill(issue_token(JWT_SECRET, "alice"))
    page.get_by_role("button", name="Use token").click()
    expect(page.get_by_text("Signed in as alice")).to_be_visible()


def test_sessions_are_listed_newest_first_and_can_be_created_and_deleted(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "first topic")
    wait_idle(page)
    page.get_by_role("button", name="New chat").click()
    expect(user_messages(page)).to_have_count(0)
    send(page, "second topic")
    wait_idle(page)
    sessions = page.get_by_role("navigation", name="Sessions").get_by_role("listitem")
    expect(sessions).to_have_count(2)
    expect(sessions.nth(0)).to_contain_text("second topic")
    expect(sessions.nth(1)).to_contain_text("first topic")

    sessions.nth(1).get_by_role("button", name="first topic", exact=True).click()
    expect(user_messages(page).first).to_contain_text("first topic")
    page.get_by_role("button", name="Actions for chat first topic").click()
    page.get_by_role("menuitem", name="Delete").click()
    expect(sessions).to_have_count(1)
    expect(sessions.first).to_contain_text("second topic")
    expect(user_messages(page)).to_have_count(0)  # the open chat was the deleted one


def test_edit_swapping_an_image_answers_for_the_new_one_and_drops_the_old_turn(
    page: Page, site: Site
) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("before.png", png((40, 30))))
    wait_thumbnails(page, 1)
    send(page, "describe")
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("40x30")

    user_messages(page).last.get_by_role("button", name="Edit").click()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("describe")
    wait_thumbnails(page, 1)
    page.get_by_role("button", name="Remove before.png").click()
    pick(page, file_payload("after.png", png((70, 20), (30, 60, 220))))
    wait_thumbnails(page, 1)
    page.get_by_role("button", name="Send").click()
    wait_idle(page)

    expect(user_messages(page)).to_have_count(1)
    expect(assistant_messages(page)).to_have_count(1)
    expect(assistant_messages(page).first).to_contain_text("Image 1: PNG, 70x20 pixels")
    expect(assistant_messages(page).first).to_contain_text("blue")
    expect(page.get_by_role("list", name="Messages")).not_to_contain_text("40x30")
    expect(user_messages(page).first.get_by_role("img", name="after.png")).to_be_visible()


def test_regenerate_keeps_the_original_images(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pick(page, file_payload("orig.png", png((33, 22))))
    wait_thumbnails(page, 1)
    send(page, "again please")
    wait_idle(page)
    first_id = assistant_messages(page).last.get_attribute("data-message-id")
    assistant_messages(page).last.get_by_role("button", name="Regenerate").click()
    wait_idle(page)
    expect(assistant_messages(page)).to_have_count(1)
    expect(assistant_messages(page).first).not_to_have_attribute("data-message-id", first_id or "")
    expect(assistant_messages(page).first).to_contain_text("Image 1: PNG, 33x22 pixels")
    expect(user_messages(page).first.get_by_role("img", name="orig.png")).to_be_visible()


def test_stop_mid_answer_cancels_the_run_and_keeps_the_partial_answer(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label=SLOW)
    send(page, WORDS)
    expect(assistant_messages(page).last).to_contain_text("w3")
    page.get_by_role("button", name="Stop").click()
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer).to_contain_text("w3")
    expect(answer).not_to_contain_text("w39")  # stopped well before the end
    token = page.evaluate("() => localStorage.getItem('iris.token')")
    session = page.evaluate("() => JSON.parse(localStorage.getItem('iris.session.default'))")
    history = httpx.get(
        f"{site.base}/api/agents/default/sessions/{session}/messages",
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_SECONDS,
    ).json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert "w39" not in history[1]["content"]


def test_reload_mid_answer_re_attaches_and_finishes_once(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label=SLOW)
    send(page, WORDS)
    expect(assistant_messages(page).last).to_contain_text("w5")
    page.reload()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(assistant_messages(page).last).to_contain_text("w39")
    wait_idle(page)
    expected = f"[local test model]\nYou said: {WORDS}"
    expect(assistant_messages(page)).to_have_count(1)
    text = assistant_messages(page).first.locator("div").first.inner_text()  # the answer's text block
    assert text == expected
    expect(user_messages(page)).to_have_count(1)


def _ask_to_delete(page: Page, site: Site) -> str:
    """Upload an image and ask the model to delete it; returns the image's signed URL."""
    open_as_guest(page, site.base)
    with page.expect_response("**/api/files") as uploaded:
        pick(page, file_payload("doomed.png", png((20, 20))))
    answer = uploaded.value.json()
    wait_thumbnails(page, 1)
    send(page, "use tool delete_attachment " + json.dumps({"uploadId": answer["id"]}))
    wait_idle(page)
    approval = page.get_by_role("region", name="Approval needed")
    expect(approval).to_be_visible()
    expect(approval).to_contain_text("delete_attachment")
    url: str = answer["url"]
    return url


def test_approving_an_interrupt_runs_the_tool(page: Page, site: Site) -> None:
    url = _ask_to_delete(page, site)
    page.get_by_role("button", name="Approve").click()
    wait_idle(page)
    expect(page.get_by_role("region", name="Approval needed")).to_be_hidden()
    tool = page.get_by_label("Tool call delete_attachment")
    expect(tool).to_contain_text("delete_attachment(")
    expect(assistant_messages(page).last).to_contain_text("Tool delete_attachment returned")
    assert httpx.get(url, timeout=REQUEST_SECONDS).status_code == 404  # the stored image is gone
    expect(user_messages(page).first).to_contain_text("[image deleted: doomed.png]")


def test_denying_an_interrupt_skips_the_tool(page: Page, site: Site) -> None:
    url = _ask_to_delete(page, site)
    page.get_by_role("button", name="Deny").click()
    wait_idle(page)
    expect(page.get_by_role("region", name="Approval needed")).to_be_hidden()
    expect(page.get_by_label("Tool call delete_attachment")).to_contain_text("The user declined this call")
    expect(assistant_messages(page).last).to_contain_text("The user declined this call")
    assert httpx.get(url, timeout=REQUEST_SECONDS).status_code == 200  # still there
    send(page, "thanks")  # the session is not stranded
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("You said: thanks")


def test_enter_sends_and_shift_enter_starts_a_new_line(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    box = page.get_by_role("textbox", name="Message")
    box.type("line one")
    box.press("Shift+Enter")
    box.type("line two")
    expect(box).to_have_value("line one\nline two")
    expect(user_messages(page)).to_have_count(0)  # nothing sent yet
    box.press("Enter")
    wait_idle(page)
    expect(box).to_have_value("")
    # The answer is Markdown: the line break is a <br>, which the rendered text shows as one.
    expect(assistant_messages(page).last).to_contain_text("You said: line one\nline two", use_inner_text=True)


def test_think_first_streams_the_reasoning_then_folds_it_and_history_keeps_it(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label=SLOW)
    page.get_by_label("Think first").check()  # the local models reason when asked
    send(page, "why is the sky blue")
    thinking = assistant_messages(page).last.get_by_label("Reasoning")
    expect(thinking).to_have_attribute("open", "")  # shown open while it thinks…
    expect(thinking).to_contain_text("about: why is the sky blue")
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer.get_by_label("Reasoning")).not_to_have_attribute("open", "")  # …folded once answered
    expect(answer).to_contain_text("You said: why is the sky blue")
    page.reload()  # from the stored history now
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    reasoning = assistant_messages(page).last.get_by_label("Reasoning")
    expect(reasoning).to_contain_text("Thinking (")
    expect(reasoning).to_contain_text("about: why is the sky blue")


def test_think_first_is_offered_only_for_models_that_reason(page: Page, site: Site) -> None:
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    plain = {
        "name": "No reasoning",
        "provider": "local",
        "modelId": "plain",
        "type": "text",
        "guestVisible": True,
        "options": {"reasoning": False},
    }
    created = httpx.post(f"{site.base}/api/models", json=plain, headers=admin, timeout=REQUEST_SECONDS)
    assert created.status_code in (201, 409), created.text  # 409: another run of this module made it
    offer_sync(site.base, admin, "local/plain")
    open_as_guest(page, site.base)
    page.get_by_label("Model").select_option(label=SLOW)
    expect(page.get_by_label("Think first")).to_be_visible()
    page.get_by_label("Think first").check()
    page.get_by_label("Model").select_option(label="No reasoning (text)")
    expect(page.get_by_label("Think first")).to_be_hidden()
    send(page, "hello")
    wait_idle(page)
    expect(assistant_messages(page).last.get_by_label("Reasoning")).to_have_count(0)  # not asked for
