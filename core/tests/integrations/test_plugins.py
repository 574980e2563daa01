"""A third party adds a system without a fork: a distribution registering an integration in
the entry point group ``toolpass.integrations`` is found the way core's own are (``toolpass
catalog`` lists it, a connection names it, the engine checks through it, its tables load from
its own package), and one that cannot be loaded breaks only its own connections."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeServer, Request
from toolpass import Toolpass, integrations
from toolpass.cli import main
from toolpass.integrations.routes import Request as Outgoing
from toolpass.wire.errors import ConfigError

TICKETS = '''
from toolpass.integrations.base import Decision, Integration, ProbeResult, load_actions


class Tickets(Integration):
    """The Acme ticket desk, asked who may read a ticket."""

    name = "tickets"
    description = "Acme's ticket desk: who may read which ticket."
    actions = load_actions(__name__)

    def check(self, user, action, resource):
        ticket, who = resource.removeprefix("ticket:"), self.user_id(user)
        data = self.get_json(f"/access/{ticket}?user={who}", what=f"ask about {resource}")
        verdict = Decision.allow if data.get("allowed") is True else Decision.deny
        return verdict(f"the desk says {who} {'may' if data.get('allowed') else 'may not'} read")

    def probe(self):
        return ProbeResult(True, "the desk answers")


INTEGRATION = Tickets
'''


USERS = {"mode": "users", "users": {"dana@example.com": "dana", "rory@example.com": "rory"}}


def distribution(site: Path, name: str, entry: str, files: dict[str, str]) -> None:
    """An installed distribution: its files and its .dist-info with one entry point."""
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[toolpass.integrations]\n{entry}\n")


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    actions = [{"name": "ticket.read", "effect": "read", "description": "Read a ticket."}]
    actions[0]["requires"] = "the desk's yes"
    route = ["GET", "/tickets/{id}", "ticket.read", "ticket:{id}", "read", ""]
    distribution(
        tmp_path,
        "acme-tickets",
        "tickets = acme_tickets:INTEGRATION",
        {
            "acme_tickets/__init__.py": TICKETS,
            "acme_tickets/actions.json": json.dumps(actions),
            "acme_tickets/routes.json": json.dumps({"routes": [route]}),
        },
    )
    distribution(
        tmp_path,
        "acme-broken",
        "broken = acme_broken:INTEGRATION",
        {"acme_broken/__init__.py": "raise RuntimeError('a bug in the plugin')\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def desk() -> Iterator[FakeServer]:
    with FakeServer() as server:

        @server.route("GET", r"/access/(?P<ticket>\w+)")
        def access(request: Request) -> dict[str, bool]:
            return {"allowed": request.query["user"] == ["dana"]}

        yield server


def test_a_distribution_installed_or_removed_while_running_is_seen_at_the_next_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a folder already on the path, after a first lookup (what a cache of the installed
    distributions must not miss)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "tickets" not in integrations.available()
    distribution(tmp_path, "acme-tickets", "tickets = acme_tickets:INTEGRATION", {})
    assert "tickets" in integrations.available()
    shutil.rmtree(tmp_path / "acme_tickets-1.0.dist-info")
    assert "tickets" not in integrations.available()


def test_a_lookup_reads_the_installed_distributions_again_only_when_the_path_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading every distribution's metadata takes about 70 ms: not once per connection."""
    integrations.available()
    reads: list[object] = []
    real = importlib.metadata.distributions

    def distributions(**kwargs: Any) -> Any:
        reads.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "distributions", distributions)
    assert integrations.get("github").name == "github"
    assert "github" in integrations.available()
    assert reads == []


def test_catalog_lists_a_third_party_integration_and_names_a_broken_one(
    plugins: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalog"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # one line, however it was wrapped
    assert "tickets Acme's ticket desk: who may read which ticket." in out
    assert " github " in out  # core's own, found the same way
    broken = out[out.index("broken (cannot be loaded") :]
    assert "from acme-broken 1.0" in broken.split(")")[0]
    assert "RuntimeError: a bug in the plugin" in broken


def test_the_engine_checks_through_a_third_party_integration(
    plugins: Path, desk: FakeServer
) -> None:
    connection = {"id": "desk", "integration": "tickets", "url": desk.url}
    connection["identity"] = USERS
    with Toolpass([connection]) as engine:
        allowed = engine.check("dana@example.com", "desk", "ticket.read", "ticket:7")
        denied = engine.check("rory@example.com", "desk", "ticket.read", "ticket:7")
    assert (allowed.decision, denied.decision) == ("allow", "deny")
    assert [r.path for r in desk.requests] == ["/access/7", "/access/7"]
    tickets = integrations.get("tickets")
    match = tickets.route_table().match(Outgoing("GET", "/tickets/7", "", {}, b""))
    assert match is not None
    assert (match.route.action, match.resource) == ("ticket.read", "ticket:7")


def test_a_broken_integration_fails_its_own_connections_only(
    plugins: Path, desk: FakeServer
) -> None:
    with pytest.raises(ConfigError, match=r"'broken' .*from acme-broken 1\.0.* cannot be loaded"):
        Toolpass([{"id": "b", "integration": "broken", "url": desk.url}])
    connection = {"id": "desk", "integration": "tickets", "url": desk.url}
    connection["identity"] = USERS
    with Toolpass([connection]) as engine:
        assert engine.check("dana@example.com", "desk", "ticket.read", "ticket:7").allowed


def test_a_name_claimed_by_two_distributions_is_refused(plugins: Path) -> None:
    distribution(
        plugins,
        "other-tickets",
        "tickets = acme_tickets:INTEGRATION",
        {},
    )
    with pytest.raises(ConfigError, match=r"registered by .*acme-tickets.* and .*other-tickets"):
        integrations.get("tickets")


def test_every_system_folder_is_registered() -> None:
    """Core's own systems register through the entry point group too: a folder without its
    line in core/pyproject.toml would be invisible."""
    folder = Path(integrations.__file__).parent
    systems = {p.parent.name for p in folder.glob("*/__init__.py")}
    assert set(integrations.available()) == {s for s in systems if not s.startswith("_")}


def test_a_plugin_module_reads_only_its_own_tables(plugins: Path) -> None:
    tickets = integrations.get("tickets")
    assert [a.name for a in tickets.actions] == ["ticket.read"]
    assert tickets.tables_package() == "acme_tickets"
