"""The "Keys & spend" panel's keys: a user makes a key, sees its secret once and copies it, the key
calls ``/v1/models`` from outside the browser, and revoking it makes it stop working; an admin sees
another user's keys; a guest is told keys need an account. The panel keeps the keyboard and gives it
back on Esc."""

from __future__ import annotations

import time
import uuid

import httpx
from playwright.sync_api import Page, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import open_as_guest, open_keys_panel, sign_in_with_token
from tests.browser.conftest import JWT_SECRET, Site
from tests.support.waits import REQUEST_SECONDS


def _user() -> str:
    return f"kate-{uuid.uuid4().hex[:8]}"


def _models_with(site: Site, key: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.get(f"{site.base}/v1/models", headers=headers, timeout=REQUEST_SECONDS).status_code


def test_a_key_is_shown_once_copied_works_and_stops_when_revoked(page: Page, site: Site) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.base)
    sign_in_with_token(page, site.base, issue_token(JWT_SECRET, _user()))
    panel = open_keys_panel(page)
    expect(panel.get_by_role("list", name="API keys")).to_contain_text("No keys yet.")
    panel.get_by_label("Name").fill("ci job")
    panel.locator("summary").click()
    panel.get_by_label("Budget per day (USD)").fill("2.5")
    panel.get_by_label("openai").check()
    panel.get_by_role("button", name="Create key").click()

    secret = panel.locator("#new-secret")
    expect(secret).to_contain_text("you won't see it again")
    key = panel.locator("#secret-value").inner_text().strip()
    assert key.startswith("iris_sk_")
    panel.get_by_role("button", name="Copy key").click()
    expect(panel.get_by_role("status")).to_have_text("Key copied.")
    assert page.evaluate("() => navigator.clipboard.readText()") == key

    card = panel.get_by_role("listitem", name="Key ci job")
    expect(card).to_contain_text("$2.50 a day")
    expect(card).to_contain_text("surfaces openai")
    prefix = card.locator("dd").first.inner_text().rstrip("…")
    assert key.startswith(prefix)
    assert len(prefix) < len(key)
    assert _models_with(site, key) == 200  # the key works from outside the browser

    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(page.get_by_role("button", name="Keys & spend")).to_be_focused()
    panel = open_keys_panel(page)
    expect(panel.get_by_role("listitem", name="Key ci job")).to_be_visible()
    assert key not in page.content()  # shown once: gone once the panel closed

    card.get_by_role("button", name="Revoke ci job").click()
    expect(card).to_contain_text("Whatever uses it stops working")
    card.get_by_role("button", name="Revoke now").click()
    expect(panel.get_by_role("status")).to_have_text("Key ci job revoked.")
    expect(card).to_contain_text("Revoked")
    expect(card.get_by_role("button")).to_have_count(0)
    deadline = time.monotonic() + 10
    while _models_with(site, key) != 401 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert _models_with(site, key) == 401


def test_a_refused_key_shows_the_problem_detail(page: Page, site: Site) -> None:
    sign_in_with_token(page, site.base, issue_token(JWT_SECRET, _user()))
    panel = open_keys_panel(page)
    panel.get_by_label("Name").fill("too long")
    panel.get_by_label("Expires after (days; blank: never)").evaluate("(box) => box.removeAttribute('max')")
    panel.get_by_label("Expires after (days; blank: never)").fill("99999")
    panel.get_by_role("button", name="Create key").click()
    expect(panel.get_by_role("alert")).to_contain_text("validation_failed")
    expect(panel.locator("#new-secret")).to_be_hidden()


def test_an_admin_sees_another_users_keys_and_narrows_to_one_user(page: Page, site: Site) -> None:
    owner = _user()
    made = httpx.post(
        f"{site.base}/api/keys",
        json={"name": f"{owner}'s script"},
        headers={"Authorization": f"Bearer {issue_token(JWT_SECRET, owner)}"},
        timeout=REQUEST_SECONDS,
    )
    assert made.status_code == 201, made.text
    sign_in_with_token(page, site.base, issue_token(JWT_SECRET, "root", role="admin"))
    panel = open_keys_panel(page)
    card = panel.get_by_role("listitem", name=f"Key {owner}'s script")
    expect(card).to_contain_text(f"Owner{owner}")
    expect(panel.get_by_label("Group by").get_by_role("option", name="User")).to_have_count(1)
    panel.get_by_label("User", exact=True).fill(owner)
    panel.get_by_role("button", name="Show").click()
    expect(panel.get_by_role("table")).to_contain_text(f"of {owner}")
    expect(panel.get_by_role("list", name="API keys").get_by_role("listitem")).to_have_count(1)
    panel.get_by_label("Owner (blank: you)").fill(owner)
    panel.get_by_label("Name").fill("made by an admin")
    panel.get_by_role("button", name="Create key").click()
    expect(panel.get_by_role("listitem", name="Key made by an admin")).to_contain_text(f"Owner{owner}")


def test_a_guest_is_told_keys_need_an_account_and_the_keyboard_stays_inside(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    panel = open_keys_panel(page)
    expect(panel).to_contain_text("Guests cannot make API keys")
    expect(panel.get_by_role("button", name="Create key")).to_be_hidden()
    close = panel.get_by_role("button", name="Close")
    expect(close).to_be_focused()
    for _ in range(12):
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.getElementById('keys-panel').contains(document.activeElement)")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("() => document.getElementById('keys-panel').contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(page.get_by_role("button", name="Keys & spend")).to_be_focused()
