"""The approvals page in a real browser: headless Chromium (Debian's, driven by Playwright)
against ``toolpass serve`` in its own process, over a SQLite store that a real secured tool in
this process asks through. `python3 dev.py test` installs chromium; a missing one fails."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ServerProcess, approvals_config
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit

APPROVER_KEY = "approver-lee-browser-0123456789"
SERVICE_KEY = "tp-service-browser-0123456789"
HOSTILE = "<script>alert('pwned')</script></pre><img src=x onerror=alert(2)>"


def _needed(what: str) -> None:
    """A missing browser fails the test, whoever runs it (never a skip that reads like a pass)."""
    pytest.fail(
        f"{what} is not installed: `python3 dev.py test` installs chromium (as root, with"
        " apt-get; elsewhere: sudo apt-get install chromium); playwright is in the test group"
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module: each test's page is in a context of its own."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _needed("playwright")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        _needed("chromium")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=binary)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Callable[..., ServerProcess]
) -> tuple[ServerProcess, str, Path]:
    monkeypatch.setenv("TP_SERVICE_KEY", SERVICE_KEY)
    monkeypatch.setenv("TP_APPROVER_LEE", APPROVER_KEY)
    audit = tmp_path / "audit.jsonl"
    config, store = approvals_config(
        tmp_path,
        f"""\
        api_keys:
          - name: lee@example.com
            key: env:TP_APPROVER_LEE
        audit_file: {audit}
        """,
    )
    return start("-config", str(config), "--port", "0"), store, audit


def test_approve_in_the_browser_and_the_retry_runs_once(
    browser: Any, served: tuple[ServerProcess, str, Path]
) -> None:
    from playwright.sync_api import expect

    server, store, audit = served
    runs: list[str] = []
    kit = Toolkit(approver=ApprovalQueue(store=store), audit=[str(audit)])

    @kit.secured_tool(effect="write", approve=True)
    def deploy(service: str, note: str) -> str:
        runs.append(service)
        return f"deployed {service}"

    with Session("dana@example.com", id="conv-browser").active():
        with pytest.raises(ApprovalPending) as waiting:
            deploy("web", HOSTILE)
        request_id = waiting.value.request_id

        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{server.url}/approvals")
        assert page.url.endswith("/approvals/login")  # nothing without signing in
        page.fill("#key", APPROVER_KEY)
        page.click("#login button[type=submit]")
        page.wait_for_selector("#me")
        assert page.inner_text("#me") == "lee@example.com"

        card = page.locator(f"#request-{request_id}")
        assert card.locator(".user").inner_text() == "dana@example.com"
        assert card.locator(".tool").inner_text() == "deploy"
        assert card.locator(".effect").inner_text() == "write"
        assert "this tool always needs approval" in card.locator(".reasons").inner_text()
        # The hostile preview is text on the page: its tags are shown, none of them ran.
        preview = card.locator(".preview").inner_text()
        assert HOSTILE in preview.replace("\\'", "'")
        assert page.locator("img").count() == 0
        assert page.locator("script").count() == 1  # the page's own
        # The audit tail shows the request (through the page's polling of /approvals/live).
        expect(page.locator("#audit-rows")).to_contain_text("approval_pending")

        card.locator("button.approve").click()
        page.wait_for_selector(f"#decided tr[data-id='{request_id}']")
        row = page.locator(f"#decided tr[data-id='{request_id}']").inner_text()
        assert "approved" in row
        assert "lee@example.com" in row
        assert page.locator(f"#request-{request_id}").count() == 0
        # Post/redirect/get: the page was reached by GET, with a note; a reload posts nothing.
        assert page.url == f"{server.url}/approvals"
        assert f"You approved request {request_id}" in page.inner_text("#flash")
        page.reload()
        assert page.locator("#flash").count() == 0

        assert deploy("web", HOSTILE) == "deployed web"
        assert runs == ["web"]
        with pytest.raises(ApprovalPending):  # used up: the same call asks again
            deploy("web", HOSTILE)
        assert runs == ["web"]

        # The page sees the new request and the call that ran, without a click.
        expect(page.locator("article.request")).to_have_count(1, timeout=10000)
        ok = page.locator("#audit-rows td").filter(has_text=re.compile(r"^ok$"))
        expect(ok).to_have_count(1, timeout=10000)
        # The history, filtered in the page's own form: the call that ran, and who approved it.
        page.select_option("#f-state", "ran")
        page.click("#filters button[type=submit]")
        page.wait_for_url(re.compile(r"/approvals\?.*\bstate=ran\b"))
        ran = page.locator("#decided tbody tr")
        expect(ran).to_have_count(1)
        assert "approved and run" in ran.inner_text()
        assert "lee@example.com" in ran.inner_text()
        assert dialogs == []


def test_approve_for_this_session_and_revoke_in_the_browser(
    browser: Any, served: tuple[ServerProcess, str, Path]
) -> None:
    """One click path for standing approvals: approve 'for this session', a later call runs
    unasked, Revoke ends it (the next call asks again)."""
    server, store, audit = served
    kit = Toolkit(approver=ApprovalQueue(store=store), audit=[str(audit)])

    @kit.secured_tool(effect="write", approve=True)
    def deploy(service: str, note: str) -> str:
        return f"deployed {service} ({note})"

    with Session("dana@example.com", id="conv-browser").active():
        with pytest.raises(ApprovalPending) as waiting:
            deploy("web", "a")
        request_id = waiting.value.request_id
        page = browser.new_page()
        page.goto(f"{server.url}/approvals/login")
        page.fill("#key", APPROVER_KEY)
        page.click("#login button[type=submit]")
        page.wait_for_selector("#me")
        card = page.locator(f"#request-{request_id}")
        card.locator("select[name=scope]").select_option("session")
        card.locator("button.approve").click()
        page.wait_for_selector("#standing tr[data-standing]")
        assert "later calls in this session are approved too" in page.inner_text("#flash")
        assert deploy("web", "a") == "deployed web (a)"
        assert deploy("web", "b") == "deployed web (b)"  # unasked: the standing approval
        page.click("#standing form.revoke button")
        page.wait_for_selector("#standing tr[data-revoked]")
        assert "revoked by lee@example.com" in page.inner_text("#standing")
        with pytest.raises(ApprovalPending):
            deploy("web", "c")
