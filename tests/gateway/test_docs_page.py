"""`GET /docs` in a real headless browser: it renders every operation, offline, and tries calls."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from playwright.async_api import Page, async_playwright

from libs.api.table import ROUTE_TABLE
from tests.support.api import Workspace
from tests.support.processes import System

# Debian's chromium (installed by `make test`'s set-up); Playwright downloads no browser here.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


async def _operations(page: Page) -> set[tuple[str, str]]:
    pairs = await page.eval_on_selector_all(
        ".opblock",
        """els => els.map(e => [
            e.querySelector('.opblock-summary-method').textContent.trim(),
            (e.querySelector('.opblock-summary-path') || {}).dataset?.path || ''])""",
    )
    # The `webhooks` section's blocks carry event names, not paths.
    return {(method, path) for method, path in pairs if path.startswith("/")}


async def test_docs_page_lists_every_operation_and_stays_local(
    system: System, ws: Workspace
) -> None:
    """Every operation of the route table is on the page; no request leaves this host."""
    hosts: set[str] = set()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = await browser.new_page()
            page.on("request", lambda r: hosts.add(urlsplit(r.url).hostname or r.url))
            response = await page.goto(system.base_url + "/docs")
            assert response is not None and response.status == 200
            await page.wait_for_selector(".opblock", timeout=30_000)
            listed = await _operations(page)
            expected = {(r.method, r.path) for r in ROUTE_TABLE}
            expected.add(("GET", "/api/v1/openapi.json"))
            assert listed == expected
            assert await page.locator(".btn.authorize").count() == 1
            # Fonts and images load late: wait for the network to settle before judging it.
            await page.wait_for_load_state("networkidle")
        finally:
            await browser.close()
    assert hosts <= LOCAL_HOSTS, hosts - LOCAL_HOSTS


async def test_docs_page_tries_a_call_with_a_bearer_key(system: System, ws: Workspace) -> None:
    """Authorize with a key, then "Try it out" on GET /workspace answers 200 with the workspace."""
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = await browser.new_page()
            await page.goto(system.base_url + "/docs")
            await page.click(".btn.authorize")
            await page.fill(".modal-ux input[type=text]", ws.key)
            await page.click(".modal-ux .auth-btn-wrapper .authorize")
            await page.click(".modal-ux .btn-done")
            block = page.locator("#operations-Workspace-get_workspace")
            await block.locator(".opblock-summary").click()
            await block.locator(".try-out__btn").click()
            await block.locator(".execute").click()
            status = block.locator(".live-responses-table tr.response .response-col_status").first
            await status.wait_for(timeout=30_000)
            assert (await status.inner_text()).strip() == "200"
            body = await block.locator(".live-responses-table .microlight").first.inner_text()
            assert ws.id in body
        finally:
            await browser.close()
