"""A lost stream on the chat page: Iris killed mid-answer and started again. The partial answer stays on
screen, the page says what happened and reconnects by itself; once the restarted Iris declares the run
lost, the text is still there and Regenerate answers again. Its own Iris process, to kill."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import assistant_messages, open_as_guest, send, wait_idle
from tests.browser.conftest import JWT_SECRET, SLOW_MODEL
from tests.support.agents import offer_sync
from tests.support.databases import copy_sqlite
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.waits import REQUEST_SECONDS

LONG = " ".join(f"w{i}" for i in range(400))


@pytest.fixture
def own_iris(sqlite_template: Path, tmp_path: Path) -> tuple[dict[str, str], int, Path]:
    """Settings for an Iris of this test's own (quick to declare a dead process's runs lost)."""
    port = free_port()
    env = {
        "IRIS_DATA_DIR": str(tmp_path / "data"),
        "IRIS_DATABASE_URL": copy_sqlite(sqlite_template, tmp_path / "iris.db"),
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "IRIS_RUN_HEARTBEAT_SECONDS": "1",
        "IRIS_RUN_STALE_SECONDS": "4",
    }
    return env, port, tmp_path


def test_a_restart_mid_answer_keeps_the_text_and_offers_regenerate(
    page: Page, own_iris: tuple[dict[str, str], int, Path]
) -> None:
    env, port, root = own_iris
    with iris_process(env, port, root / "first.log") as first:
        admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
        created = httpx.post(
            f"{first.base_url}/api/models", json=SLOW_MODEL, headers=admin, timeout=REQUEST_SECONDS
        )
        assert created.status_code == 201, created.text
        offer_sync(first.base_url, admin, "local/slow")
        open_as_guest(page, first.base_url)
        page.get_by_label("Model").select_option(label="Slow vision (vision)")
        send(page, LONG)
        expect(assistant_messages(page).last).to_contain_text("w5")
        first.kill()  # kill -9: no goodbye on the stream

        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("broke off mid-answer")
        expect(alert.get_by_role("button", name="Retry")).to_be_visible()
        answer = assistant_messages(page).last
        expect(answer).to_contain_text("w5")  # the partial text stays
        kept = answer.inner_text()

        with iris_process(env, port, root / "second.log"):
            # The page reconnects by itself; the restarted Iris declares the dead process's run lost.
            # Either the run's own end (run_lost) or, when it was declared lost before the page came
            # back, the page's word for it: both keep the text and offer Regenerate.
            expect(alert.get_by_role("button", name="Regenerate")).to_be_visible()
            expect(alert).not_to_contain_text("Reconnecting")
            expect(assistant_messages(page).last).to_contain_text(kept.split("\n")[0])
            expect(page.get_by_text("The answer was interrupted.")).to_be_visible()
            alert.get_by_role("button", name="Regenerate").click()
            wait_idle(page)
            expect(assistant_messages(page).last).to_contain_text("w399")
            expect(page.get_by_role("alert")).to_be_empty()
