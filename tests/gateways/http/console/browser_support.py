"""One headless Chromium for the console's tests, driven by Playwright.

The browser is Debian's ``chromium`` (``executable_path``), so nothing is downloaded at run
time. When it is missing and the user is root with apt-get (the suite's machines, CI
included), the package is installed once per run (``tests/system_packages.py``); anywhere
else, or without the ``playwright`` package, the tests that need it are skipped with the
reason. One browser serves the whole run; each test gets a fresh context (no storage shared).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from tests.system_packages import apt_install

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

__all__ = ["Watched", "browser", "watched"]

_NAMES = ("chromium", "chromium-browser")


def _chromium() -> str | None:
    for name in _NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """A headless Chromium for the run (the test is skipped when none can run here)."""
    try:
        from playwright.async_api import Error, async_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed: pip install -e '.[dev]'")
    path = _chromium()
    if path is None:
        why = apt_install("chromium")
        path = _chromium()
        if path is None:
            pytest.skip(f"no chromium to drive: {why or 'installed, but not on PATH'}")
    async with async_playwright() as playwright:
        try:
            launched = await playwright.chromium.launch(executable_path=path, headless=True)
        except Error as exc:
            pytest.skip(f"chromium ({path}) cannot start here: {exc.message.splitlines()[0]}")
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Watched:
    """A page, and what it did that a test may forbid (dialogs, errors, console lines)."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest_asyncio.fixture(loop_scope="session")
async def watched(browser: Browser) -> AsyncIterator[Watched]:
    """A fresh context and page (a phone-sized viewport would be ``viewport=…``)."""
    context = await browser.new_context()
    context.set_default_timeout(10_000)
    page = await context.new_page()
    seen = Watched(page)

    async def on_dialog(dialog: object) -> None:
        from playwright.async_api import Dialog

        assert isinstance(dialog, Dialog)
        seen.dialogs.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda exc: seen.errors.append(str(exc)))
    page.on("console", lambda msg: seen.console.append(f"{msg.type}: {msg.text}"))
    page.on("request", lambda request: seen.requests.append(request.url))
    try:
        yield seen
    finally:
        await context.close()
