"""The console in a real browser: Playwright driving Debian's Chromium (``/usr/bin/chromium``,
never a browser Playwright downloads) against a real ``hindsight serve`` subprocess.

Without Chromium or Playwright the browser tests skip with the reason, except under CI
(``CI`` set), where they fail: .ci/run installs Chromium. ``HINDSIGHT_CONSOLE_SCREENSHOTS=1``
makes the view tests write the screenshots of docs/console.md into docs/img/ (off by default,
so a test run never changes the tree): ``HINDSIGHT_CONSOLE_SCREENSHOTS=1 pytest tests/console
-m "not postgres"`` (each test then gets a fresh server and the tenants ``acme`` / ``globex``).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI, REPO, fresh_pg_database
from tests.server.conftest import Served, start_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("HINDSIGHT_CONSOLE_SCREENSHOTS", "") not in ("", "0")
IMAGES = REPO / "docs" / "img"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI must run the browser tests: .ci/run installs Chromium)")
    pytest.skip(reason)


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium for one test (Playwright's sync API). Not shared between tests:
    while Playwright's sync API is running, its event loop counts as running in this thread,
    and other tests' ``asyncio.run`` would fail."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[dev]'")
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        _unavailable(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def shared_console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``hindsight serve`` over SQLite + Qdrant Edge, shared by the console tests (each test
    uses tenants of its own)."""
    server = start_server(tmp_path_factory.mktemp("console-sqlite"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def console_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """The shared SQLite server; when screenshots are made, a fresh one per test instead, so
    that the pictures show plain tenant names (``acme``) and only that test's data."""
    if not SCREENSHOTS:
        yield request.getfixturevalue("shared_console_server")
        return
    server = start_server(tmp_path_factory.mktemp("console-shots"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def console_server_pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``hindsight serve`` over a fresh PostgreSQL database (skipped without
    HINDSIGHT_TEST_DATABASE_URL locally, failed under CI)."""
    for url in fresh_pg_database():
        server = start_server(tmp_path_factory.mktemp("console-pg"), database_url=url)
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_server(request: pytest.FixtureRequest) -> Served:
    """The console server over SQLite, then over PostgreSQL (the main flows run on both)."""
    name = "console_server" if request.param == "sqlite" else "console_server_pg"
    served: Served = request.getfixturevalue(name)
    return served


@pytest.fixture
def tenants(request: pytest.FixtureRequest) -> tuple[str, str]:
    """Two tenant names unique to the test (``acme`` and ``globex`` on the fresh servers of
    a screenshot run)."""
    if SCREENSHOTS:
        return "acme", "globex"
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:50]
    return f"a-{base}", f"b-{base}"


@pytest.fixture
def page_errors() -> list[str]:
    """Filled by :func:`open_page` with every script error, dialog and CSP violation."""
    return []


ANSWERED_4XX = "Failed to load resource: the server responded with a status of 4"
"""Chromium logs an error page (a refused CSRF, 404 of another tenant's id) as a console error;
the tests check those pages themselves."""


def _console(message: Any, errors: list[str]) -> None:
    if message.type == "error" and not message.text.startswith(ANSWERED_4XX):
        errors.append(f"console: {message.text}")


def open_page(browser: Any, errors: list[str]) -> Any:
    """A new page in its own context (own cookies) that records script errors, dialogs
    (``alert``/``confirm`` would mean injected script ran) and console errors (CSP
    violations are reported there)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: _console(msg, errors))

    def dialog(d: Any) -> None:
        errors.append(f"dialog: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)
    return page


def sign_in(page: Any, served: Served, tenant: str) -> None:
    """Sign in with a key of ``tenant`` through the login form."""
    page.goto(f"{served.url}/console/login")
    page.fill("input[name=key]", served.key(tenant))
    page.click("button[type=submit]")
    page.wait_for_url(f"{served.url}/console/")
    assert page.inner_text("[data-tenant]") == tenant


def follow(page: Any, target: Any) -> None:
    """Click a link or a submit button (a selector or a locator) and wait until the page it
    leads to has loaded. ``click()`` can return before the next page is parsed, and reading
    the page then reads the old one (or none): a count of 0 where the new page shows 20."""
    with page.expect_navigation(wait_until="load"):
        (page.locator(target) if isinstance(target, str) else target).click()


def screenshot(page: Any, name: str) -> None:
    """Write docs/img/console-<name>.png from the live page when screenshots are asked for."""
    if SCREENSHOTS:
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / f"console-{name}.png"), full_page=True)
