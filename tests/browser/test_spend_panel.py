"""The "Keys & spend" panel's spend: after a run on a priced offline model the panel shows what it
cost today and this month, grouped by model and agent, and as a CSV download; at a phone's size it fits
without sideways scrolling; axe finds nothing serious in it, light or dark."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import AXE, open_keys_panel, send, serious, sign_in_with_token, wait_idle
from tests.browser.conftest import JWT_SECRET, Site, patient
from tests.support.databases import copy_sqlite
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.waits import REQUEST_SECONDS

PHONE: ViewportSize = {"width": 390, "height": 844}
PRICED_MODEL = {
    "name": "Priced echo",
    "provider": "local",
    "modelId": "priced",
    "type": "text",
    "options": {"pricing": {"input": 3.0, "output": 15.0}},
}
SPEND_AGENT = {"slug": "spend", "name": "Spend", "models": ["local/priced"]}


def _priced(base: str) -> str:
    """An agent (for signed-in users only) whose one model has a price, so its runs cost something."""
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    for path, body in (("/api/models", PRICED_MODEL), ("/api/agents", SPEND_AGENT)):
        made = httpx.post(base + path, json=body, headers=admin, timeout=REQUEST_SECONDS)
        assert made.status_code in (201, 409), made.text  # 409: another run of this module made it
    return "/chat/spend"


@pytest.fixture(scope="module")
def priced_agent(site: Site) -> str:
    return _priced(site.base)


@pytest.fixture(scope="module")
def budgeted(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory, site: Site) -> Iterator[str]:
    """A second Iris whose users have a daily budget one priced run crosses, and a monthly one."""
    root = tmp_path_factory.mktemp("budgeted")
    port = free_port()
    env = {
        "IRIS_DATA_DIR": str(root / "data"),
        "IRIS_DATABASE_URL": copy_sqlite(sqlite_template, root / "iris.db"),
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "IRIS_BUDGET_USER_DAY_USD": "0.0001",
        "IRIS_BUDGET_USER_MONTH_USD": "5",
    }
    with iris_process(env, port, root / "iris.log") as iris:
        _priced(iris.base_url)
        yield iris.base_url


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    patient(context)
    try:
        yield context.new_page()
    finally:
        context.close()


def usd(value: float) -> str:
    """Dollars as the panel writes them."""
    if value == 0:
        return "$0.00"
    if value < 0.01:
        return f"${value:.6f}"
    return "$" + re.sub(r"(\.\d\d)(\d*?)0+$", r"\1\2", f"{value:.{4 if value < 1 else 2}f}")


def _spent_today(base: str, token: str) -> float:
    me = httpx.get(
        f"{base}/api/usage/me", headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_SECONDS
    )
    return float(me.json()["day"]["spent"])


def test_spend_shows_a_runs_cost_by_period_model_and_agent_and_as_csv(
    page: Page, site: Site, priced_agent: str, tmp_path: Path
) -> None:
    token = issue_token(JWT_SECRET, f"sam-{uuid.uuid4().hex[:8]}")
    sign_in_with_token(page, site.base, token, priced_agent)
    send(page, "what does this cost?")
    wait_idle(page)
    cost = _spent_today(site.base, token)
    assert cost > 0

    panel = open_keys_panel(page)
    expect(panel.locator(".period", has_text="Today:")).to_contain_text(f"{usd(cost)} (no budget)")
    expect(panel.locator(".period", has_text="This month:")).to_contain_text(usd(cost))
    table = panel.get_by_role("table")
    panel.get_by_label("Group by").select_option(label="Model")
    expect(table.get_by_role("row", name="local/priced")).to_contain_text(usd(cost))
    panel.get_by_label("Group by").select_option(label="Agent")
    expect(table.get_by_role("row", name="spend")).to_contain_text("1")
    expect(panel.get_by_label("Group by").get_by_role("option", name="User")).to_have_count(0)  # admins only

    with page.expect_download() as downloading:
        panel.get_by_role("button", name="Download CSV").click()
    saved = tmp_path / downloading.value.suggested_filename
    downloading.value.save_as(saved)
    lines = saved.read_text().splitlines()
    assert lines[0].startswith("agent,runs,cost_usd")
    assert any(line.startswith("spend,1,") for line in lines), lines


def test_spend_is_shown_against_the_budget_and_the_next_run_is_refused(page: Page, budgeted: str) -> None:
    token = issue_token(JWT_SECRET, f"bea-{uuid.uuid4().hex[:8]}")
    sign_in_with_token(page, budgeted, token, "/chat/spend")
    panel = open_keys_panel(page)
    expect(panel.locator(".period", has_text="Today:")).to_contain_text("$0.00 of $0.000100")
    expect(panel.locator(".period", has_text="This month:")).to_contain_text("$0.00 of $5.00 · $5.00 left")
    panel.get_by_role("button", name="Close").click()
    send(page, "spend my budget")
    wait_idle(page)  # the run that crosses the budget finishes
    cost = _spent_today(budgeted, token)
    assert cost > 0.0001
    panel = open_keys_panel(page)
    expect(panel.locator(".period", has_text="Today:")).to_contain_text(
        f"{usd(cost)} of $0.000100 · $0.00 left"
    )
    expect(panel.get_by_role("meter", name=re.compile("^Today"))).to_have_attribute("value", "0.0001")
    panel.get_by_role("button", name="Close").click()
    send(page, "one more")
    expect(page.get_by_role("alert").filter(has_text="budget_exceeded")).to_be_visible()


def test_the_panel_fits_a_phone_and_reads_in_the_dark(phone: Page, site: Site) -> None:
    sign_in_with_token(phone, site.base, issue_token(JWT_SECRET, f"pat-{uuid.uuid4().hex[:8]}"))
    panel = open_keys_panel(phone)
    panel.get_by_label("Name").fill("a phone's key with a rather long name to wrap")
    panel.locator("summary").click()
    panel.get_by_role("button", name="Create key").click()
    expect(panel.locator("#new-secret")).to_contain_text("you won't see it again")
    assert phone.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
    assert (
        phone.evaluate(
            "() => { const d = document.getElementById('keys-panel'); return d.scrollWidth - d.clientWidth; }"
        )
        <= 0
    )
    box = panel.get_by_role("button", name="Close").bounding_box()
    assert box is not None
    assert box["x"] + box["width"] <= PHONE["width"]
    assert box["height"] >= 24
    for name in ("Copy key", "Done", "Download CSV"):
        button = panel.get_by_role("button", name=name).bounding_box()
        assert button is not None, name
        assert button["height"] >= 24, name
    phone.emulate_media(color_scheme="dark")
    colours = phone.evaluate(
        "() => { const s = getComputedStyle(document.getElementById('keys-panel'));"
        " return [s.backgroundColor, s.color]; }"
    )
    assert colours == ["rgb(29, 33, 41)", "rgb(227, 230, 238)"], colours  # --surface and --fg, dark


@pytest.mark.skipif(not AXE.exists(), reason="node_modules/axe-core is not installed")
def test_axe_finds_nothing_serious_in_the_panel(page: Page, site: Site) -> None:
    sign_in_with_token(page, site.base, issue_token(JWT_SECRET, f"axe-{uuid.uuid4().hex[:8]}"))
    panel = open_keys_panel(page)
    panel.get_by_label("Name").fill("scanned")
    panel.locator("summary").click()
    panel.get_by_role("button", name="Create key").click()
    expect(panel.locator("#new-secret")).to_be_visible()
    assert serious(page) == [], "the panel with a new key, light"
    page.emulate_media(color_scheme="dark")
    assert serious(page) == [], "the panel with a new key, dark"
    panel.get_by_role("button", name="Revoke scanned").click()
    assert serious(page) == [], "a revocation asked, dark"
    page.set_viewport_size(PHONE)
    assert serious(page) == [], "the panel on a phone, dark"
