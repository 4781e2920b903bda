"""Fixtures of the browser tests (helpers in ``console.py``); without Chromium or the ``playwright``
package every test here is skipped with a message naming what to install.

- ``browser``: one headless Chromium for the session (``--no-sandbox`` only when running as root);
- ``console``: the real ``ctx serve --http`` (127.0.0.1, a free port, a bearer token) over a small
  workspace of notes, an agents folder and a skills folder, indexed before it starts (a module's
  ``SERVE`` dict adds to its config);
- ``events`` and ``page``: a fresh browser context logged in through the login form, every dialog and
  console error it sees recorded in ``events``;
- ``shoot``: ``shoot(page, NAME)`` saves ``docs/img/console-NAME.png``, only when ``CTX_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser.console import SCREENSHOTS, WAIT_MS, Console, Events, chromium_path, log_in, open_page, serve_console

from support.http import stop_process

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # skipped below, naming the package
    sync_playwright = None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module. Not per session: while Playwright's sync API lives it keeps an
    event loop marked running in this thread, and every async test run after it (in tests/server,
    say) failed with "Cannot run the event loop while another loop is running". (A package scope
    would act as the session's here: tests/browser has no __init__.py.)"""
    if sync_playwright is None:
        pytest.skip("Playwright for Python is not installed: pip install -e '.[test]' (never `playwright install`)")
    executable = chromium_path()
    if executable is None or not Path(executable).exists():
        pytest.skip("no Chromium to drive: install Debian's `chromium` package (apt-get install chromium) "
                    "or point CTX_TEST_CHROMIUM at a Chromium binary")
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, headless=True, args=args, timeout=WAIT_MS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def console(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """The served console; a test module's ``SERVE`` dict, when it has one, is passed to ``serve_console``."""
    served = serve_console(tmp_path_factory.mktemp("console"), **getattr(request.module, "SERVE", {}))
    yield served
    stop_process(served.process)


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def page(browser: Any, console: Console, events: Events) -> Iterator[Any]:
    """A page of ``console`` logged in through the login form (on the search page)."""
    opened = open_page(browser, events)
    log_in(opened, console.url)
    opened.wait_for_url(f"{console.url}/ui/search")
    yield opened
    opened.context.close()


@pytest.fixture
def shoot() -> Callable[..., None]:
    """``shoot(page, name)``: the window (``full_page=True``: the whole page) as ``docs/img/console-NAME.png``,
    only when ``CTX_SCREENSHOTS=1``."""
    def save(page: Any, name: str, full_page: bool = False) -> None:
        if os.environ.get("CTX_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"console-{name}.png"), full_page=full_page)

    return save
