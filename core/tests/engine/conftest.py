"""A small integration against a fake API, to test the engine without any vendor."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeServer, Reply, Request
from toolpass.engine import Toolpass
from toolpass.integrations.base import Action, ConfigKey, Integration, ProbeResult
from toolpass.wire.decision import Decision


class Demo(Integration):
    """Users by email at ``GET /users?email=``; grants at ``GET /grants/{user}?resource=``."""

    name = "demo"
    description = "A test system."
    keys = (
        ConfigKey("token", "The engine's token.", secret=True, required=True),
        ConfigKey("mode", "A choice.", default="strict", choices=("strict", "lax")),
    )
    actions = (
        Action("item.read", "Read an item.", "read", "the read grant"),
        Action("item.write", "Change an item.", "write", "the write grant"),
    )
    identity_modes = ("lookup",)

    def _get(self, path: str, what: str, **params: str) -> Any:
        answer = self.request(
            "GET", path, params=params, headers={"Authorization": f"Bearer {self.secret('token')}"}
        )
        if answer.status != 200:
            raise self.failure(answer, what)
        return answer.json()

    def lookup_user(self, email: str, mode: str) -> Sequence[str]:
        return [str(u) for u in self._get("/users", "the user look-up", email=email)["users"]]

    def check(self, user: str, action: str, resource: str) -> Decision:
        uid = self.user_id(user)
        grants = self._get(f"/grants/{uid}", "the grant look-up", resource=resource)
        if not isinstance(grants, dict) or not isinstance(grants.get("grants"), list):
            return Decision.unknown("demo's answer has no grants list")
        verb = action.split(".")[1]
        if verb in grants["grants"]:
            return Decision.allow(f"{uid} has the {verb} grant")
        return Decision.deny(f"{uid} lacks the {verb} grant")

    def probe(self) -> ProbeResult:
        return ProbeResult(True, f"signed in as {self._get('/me', 'the probe')['login']}")


INTEGRATION = Demo


def demo_api(server: FakeServer) -> FakeServer:
    """Routes of the demo system: dana -> d1 (read), erin -> e1 (read, write), twins -> two."""
    users = {
        "dana@example.com": ["d1"],
        "erin@example.com": ["e1"],
        "twin@example.com": ["t1", "t2"],
    }
    grants = {"d1": ["read"], "e1": ["read", "write"]}

    @server.route("GET", "/users")
    def find(request: Request) -> dict[str, Any] | Reply:
        if request.headers.get("authorization") != "Bearer s3cret":
            return Reply(401, {"message": "Bad credentials"})
        return {"users": users.get(request.arg("email") or "", [])}

    @server.route("GET", r"/grants/(?P<user>\w+)")
    def grant(request: Request) -> dict[str, Any]:
        return {"grants": grants.get(request.params["user"], [])}

    @server.route("GET", "/me")
    def me(request: Request) -> dict[str, Any]:
        return {"login": "engine"}

    return server


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield demo_api(server)


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DEMO_TOKEN", "s3cret")
    return "env:DEMO_TOKEN"


def demo_connection(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "demo", "integration": Demo, "url": url, "token": "env:DEMO_TOKEN", **extra}


@pytest.fixture
def tp(fake: FakeServer, token: str) -> Iterator[Toolpass]:
    with Toolpass([demo_connection(fake.url)]) as engine:
        yield engine


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make ``integration: demo`` resolve to :class:`Demo`, registered as a third party's
    would be (an installed distribution's entry point in ``toolpass.integrations``)."""
    info = tmp_path / "toolpass_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toolpass-demo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[toolpass.integrations]\ndemo = {__name__}:Demo\n")
    monkeypatch.syspath_prepend(str(tmp_path))
