"""The story every adapter tells, written once; each framework's test only drives it.

A tool that declares nothing (``toolpass.tool()``) proposes a fix: it reads a file of the
repository on the agent's own authority, then opens a pull request as the user. The engine
asks a fake GitHub on 127.0.0.1 whether the user may. For rory, who may only read, the pull
request is refused inside PyGithub before it leaves the process; the fake's request log
proves it never arrived, while the read did. The model reads why, and the call's one audit
event lists both requests. For dana, who may write, the pull request is opened.
"""

from __future__ import annotations

import os
from typing import Any

from fakes.github import FakeGitHub
from github import Auth, Github
from toolpass import AuditEvent, Toolkit, Toolpass, intercept
from toolpass.intercept import as_user

MAY_NOT = "rory@example.com"  # reads only
MAY = "dana@example.com"  # writes
TOKEN = "ghp_agent0000000000000000000000000000000"
REPO, PATH = "acme/widgets", "README.md"
ARGUMENTS = {"repo": REPO, "path": PATH, "fix": "Fix the typo in the title"}


class Scenario:
    """Use as a context manager: starts the fake GitHub and the engine, stops both."""

    def __init__(self) -> None:
        self.github = FakeGitHub()
        self.events: list[AuditEvent] = []

    def __enter__(self) -> Scenario:
        gh = self.github.__enter__()
        gh.add_repo(REPO, {"dana": "write", "rory": "read"}, files={PATH: "# widgets\nTpyo\n"})
        gh.add_token(TOKEN)
        os.environ["TOOLPASS_SCENARIO_TOKEN"] = TOKEN
        self.engine = Toolpass(
            [
                {
                    "id": "github",
                    "integration": "github",
                    "url": gh.api_url,
                    "token": "env:TOOLPASS_SCENARIO_TOKEN",
                    "identity": {"mode": "users", "users": {MAY: "dana", MAY_NOT: "rory"}},
                }
            ]
        )
        self.kit = Toolkit(permissions=self.engine, act_as="agent", audit=[self.events.append])
        self.propose_fix = self.kit.tool()(self._propose_fix())
        return self

    def __exit__(self, *exc: object) -> None:
        intercept.uninstall()
        self.engine.close()
        self.github.__exit__(*exc)

    def _propose_fix(self) -> Any:
        api = self.github.api_url

        def propose_fix(repo: str, path: str, fix: str) -> str:
            """Propose a fix to a file of a repository as a pull request."""
            gh = Github(base_url=api, auth=Auth.Token(TOKEN), retry=None)
            r = gh.get_repo(repo)
            current = r.get_contents(path)  # the agent reads on its own authority
            with as_user():  # checked against the user
                pr = r.create_pull(title=fix, body=f"Fixes {current.path}", head="fix", base="main")
            return f"opened pull request #{pr.number}"

        return propose_fix

    # What every framework's run must show.

    def assert_refused(self, output: str) -> None:
        """rory's run: the read went out, the pull request did not, the model read why."""
        sent = [(r.method, r.path) for r in self.github.requests]
        assert ("GET", f"/repos/{REPO}/contents/{PATH}") in sent
        assert not any(m == "POST" and p.endswith("/pulls") for m, p in sent), sent
        assert "not_authorized" in output, output
        assert "pr.create" in output, output
        [event] = [e for e in self.events if e.tool == "propose_fix"]
        assert event.code == "not_authorized"
        verdicts = {(a.get("action"), a["as"], a["verdict"]) for a in event.actions}
        assert ("contents.read", "agent", "allowed") in verdicts, verdicts
        assert ("pr.create", "user", "not_authorized") in verdicts, verdicts

    def assert_opened(self, output: str) -> None:
        """dana's run: the pull request was opened."""
        assert "opened pull request #1" in output, output
        assert any(r.method == "POST" and r.path.endswith("/pulls") for r in self.github.requests)
