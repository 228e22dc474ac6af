"""Browser tests: the built-in chat page in the system's Chromium, against a real ``python -m iris serve``.

One Iris process serves the whole session and one Chromium each module; every test gets a fresh
browser context (its own ``localStorage``) and signs in as a new guest, so tests do not see each
other's chats.
Playwright's own browser download is never used: ``executable_path`` points at Debian's ``chromium``.
On a failure the test's screenshot and browser console log are saved under its pytest temp dir, and
the path is printed.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import sys
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, expect, sync_playwright

from iris.app.security.auth import issue_token
from tests.support.agents import offer_sync
from tests.support.databases import copy_sqlite
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.mcp_servers import SERVER as MCP_SERVER
from tests.support.postgres import free_port
from tests.support.waits import PAGE_SECONDS, REQUEST_SECONDS, SERVER_SECONDS, ms

JWT_SECRET = "browser-tests-secret-that-is-long-enough-for-hs256"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SLOW_MODEL = {
    "name": "Slow vision",
    "provider": "local",
    "modelId": "slow",
    "type": "vision",
    "supportsTools": True,
    "guestVisible": True,
    "options": {"delayMs": 60},
}
FAILED = pytest.StashKey[bool]()


def patient(context: BrowserContext) -> None:
    """Every Playwright wait bounded for a loaded machine (tests/support/waits.py): actions, navigations
    and ``expect`` assertions, which otherwise give up after Playwright's own 30 s and 5 s."""
    context.set_default_timeout(ms(PAGE_SECONDS))
    expect.set_options(timeout=ms(PAGE_SECONDS))


def find_chromium() -> str | None:
    """Debian's ``chromium`` (what ``.ci/run`` installs), else any chromium on PATH."""
    for candidate in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(candidate)
        if found:
            return found
    return None


@dataclass(frozen=True)
class Site:
    """The Iris under test, and two static pages on other origins: one listed in IRIS_CORS_ORIGINS."""

    iris: IrisProcess
    allowed_origin: str
    denied_origin: str
    pages: Path
    """What both static origins serve."""

    @property
    def base(self) -> str:
        return self.iris.base_url


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def static_site(root: Path) -> Iterator[str]:
    """A tiny static file server on another origin (stdlib ``http.server``, port picked by the OS)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip("no Chromium found (install Debian's `chromium`; .ci/run does): browser tests skipped")
    return path


@pytest.fixture(scope="session")
def site(
    sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[Site]:
    """One Iris for the session, on a temp data dir, with a slow local model and CORS for one origin."""
    root = tmp_path_factory.mktemp("browser-site")
    pages = root / "pages"
    pages.mkdir()
    (pages / "index.html").write_text("<!doctype html><title>elsewhere</title><p>another origin</p>")
    port = free_port()
    marks = root / "marks"
    marks.mkdir()
    # the test MCP server's tools, beside the built-ins (tests/browser/test_tools.py)
    models_file = root / "models.toml"
    models_file.write_text(
        "[[mcpServers]]\n"
        'name = "charts"\ntransport = "stdio"\n'
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(MCP_SERVER))}]\n"
        f"env = {{ MARK_DIR = {json.dumps(str(marks))} }}\nconnectTimeoutSeconds = 60\n\n"
        # the seeded default agent, and the test server's tools
        '[[agents]]\nslug = "default"\nname = "Iris"\n'
        'description = "A helpful assistant that can look at images."\n'
        'instructions = "You are Iris, a helpful assistant that can look at images."\n'
        'models = ["local/vision", "local/text"]\nguestAccess = true\n'
        'tools = ["image_info", "current_time", "delete_attachment", "mcp:charts/*"]\n'
    )
    with static_site(pages) as allowed, static_site(pages) as denied:
        env = {
            "IRIS_DATA_DIR": str(root / "data"),
            "IRIS_DATABASE_URL": copy_sqlite(sqlite_template, root / "iris.db"),
            "IRIS_JWT_SECRET": JWT_SECRET,
            "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "IRIS_CORS_ORIGINS": allowed,
            "IRIS_MODELS_FILE": str(models_file),
            # Every test signs in as a new guest from 127.0.0.1 on this one server: guest quotas are
            # tested elsewhere (tests/security/test_quotas.py), here they would only ration the page's tests.
            "IRIS_QUOTA_GUEST_TOKENS_PER_HOUR": "0",
            "IRIS_QUOTA_GUEST_RUNS_PER_MINUTE": "0",
            "IRIS_QUOTA_GUEST_CONCURRENT_RUNS": "0",
            "IRIS_QUOTA_GUEST_UPLOADS_PER_MINUTE": "0",
        }
        with iris_process(env, port, root / "iris.log") as iris:
            admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
            created = httpx.post(
                f"{iris.base_url}/api/models", json=SLOW_MODEL, headers=admin, timeout=REQUEST_SECONDS
            )
            assert created.status_code == 201, created.text
            offer_sync(iris.base_url, admin, "local/slow")
            yield Site(iris=iris, allowed_origin=allowed, denied_origin=denied, pages=pages)


@pytest.fixture(scope="module")
def browser(chromium_path: str, site: Site) -> Iterator[Browser]:
    """Chromium for one module. Playwright's sync API keeps an event loop running in this thread while
    it is open, so it closes before the suite's asyncio tests run (and starts after ``site``, whose
    set-up migrates a database with ``asyncio.run``)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path, args=CHROMIUM_FLAGS, timeout=ms(SERVER_SECONDS)
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture
def page(browser: Browser, site: Site, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Page]:
    """A fresh context and page; on failure, a screenshot and the console log under ``tmp_path``."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    patient(context)
    new_page = context.new_page()
    console: list[str] = []

    def record(message: ConsoleMessage) -> None:
        console.append(f"[{message.type}] {message.text}")

    new_page.on("console", record)
    new_page.on("pageerror", lambda error: console.append(f"[pageerror] {error}"))
    try:
        yield new_page
    finally:
        if request.node.stash.get(FAILED, False):
            folder = tmp_path / "browser-failure"
            folder.mkdir(exist_ok=True)
            try:
                new_page.screenshot(path=str(folder / "page.png"), full_page=True)
            except Exception as exc:
                console.append(f"[screenshot failed] {exc}")
            (folder / "console.log").write_text("\n".join(console) + "\n")
            print(f"\nbrowser failure artifacts (screenshot, console log): {folder}")
        context.close()
