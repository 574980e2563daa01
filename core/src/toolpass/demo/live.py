"""The demo's second part: the permission engine asking a live system, and the request hook.

A small GitHub runs on 127.0.0.1 (``toolpass.demo.github``). ``Toolpass`` asks it whether a
user may open a pull request; then a tool that declares nothing sends its requests with
http.client, and the request hook checks each one before it leaves the process.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from http.client import HTTPConnection
from urllib.parse import urlsplit

from toolpass import AuditEvent, Session, Toolkit, Toolpass, as_user, literal
from toolpass.adapting import refusal_text
from toolpass.demo.github import REPO, DemoGitHub
from toolpass.intercept import uninstall

USERS = {"dana@example.com": "dana", "rory@example.com": "rory"}


def main() -> None:
    print("\n=== the live engine: toolpass asks GitHub (a small one on 127.0.0.1) ===")
    with DemoGitHub() as github, _engine(github.url) as tp:
        for user in USERS:
            d = tp.check(user, "github", "pr.create", f"repo:{REPO}")
            print(f"  tp.check({user!r}, 'github', 'pr.create', 'repo:{REPO}')")
            print(f"    -> {d.decision}: {d.reason}")

        print("\n=== the request hook: a tool that declares nothing, checked by what it sends ===")
        events: list[AuditEvent] = []
        kit = Toolkit(permissions=tp, act_as="agent", audit=[events.append], on_refuse=refusal_text)
        propose_fix = kit.tool()(_propose_fix(github.url))
        try:
            for user in ("rory@example.com", "dana@example.com"):
                before = len(github.requests)
                with Session(user).active():
                    result = propose_fix("README.md", "Fix the typo")
                print(f"\n▶ propose_fix for {user}")
                for line in str(result).splitlines():
                    print(textwrap.fill(line, 96, initial_indent="  │ ", subsequent_indent="  │ "))
                arrived = [f"{m} {p}" for m, p in github.requests[before:] if "/collab" not in p]
                print(f"  GitHub received: {', '.join(arrived) or 'nothing'}")
        finally:
            uninstall()
        print(
            "\n  (rory's pull request was refused inside http.client, before it left the process;"
        )
        print("   dana's answer is fenced: the tool read a file, which is untrusted content)")
        for e in events:
            outcome = e.outcome if e.code is None else f"{e.outcome}: {e.code}"
            print(f"  audit: {e.user or '-':18} {e.tool} {outcome}")
            for a in e.actions:
                print(f"         request {a.get('action')} as the {a['as']}: {a['verdict']}")


def _engine(url: str) -> Toolpass:
    return Toolpass(
        [
            {
                "id": "github",
                "integration": "github",
                "url": url,
                "token": literal("ghp_demo0000000000000000000000000000"),
                "identity": {"mode": "users", "users": USERS},
            }
        ]
    )


def _propose_fix(api: str) -> Callable[[str, str], str]:
    address = urlsplit(api)

    def propose_fix(path: str, fix: str) -> str:
        """Propose a fix to a file of acme/widgets as a pull request."""
        http = HTTPConnection(address.hostname or "", address.port, timeout=10)
        try:
            http.request("GET", f"/repos/{REPO}/contents/{path}")
            http.getresponse().read()  # the agent reads on its own authority
            body = json.dumps({"title": fix, "head": "fix", "base": "main"})
            with as_user():  # checked against the user
                http.request(
                    "POST", f"/repos/{REPO}/pulls", body, {"Content-Type": "application/json"}
                )
                number = json.loads(http.getresponse().read())["number"]
            return f"opened pull request #{number}"
        finally:
            http.close()

    return propose_fix
