"""Recording what tools do, then holding them to it: a round trip on a real scenario."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit, Toolpass, ToolRefused, intercept
from toolpass.intercept import as_agent, as_user

from .conftest import TOKEN, posted

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def tools(kit: Toolkit, gh: FakeGitHub) -> dict[str, Any]:
    base = gh.api_url

    @kit.tool()
    def propose_fix(repo: str, path: str) -> int:
        with as_agent():
            requests.get(f"{base}/repos/{repo}/contents/{path}", headers=HEADERS, timeout=5)
        with as_user():
            pr = {"title": "fix", "head": "fix", "base": "main"}
            r = requests.post(f"{base}/repos/{repo}/pulls", json=pr, headers=HEADERS, timeout=5)
        return r.status_code

    @kit.tool()
    def nightly_check() -> int:  # its repository is decided at run time, not by arguments
        return requests.get(f"{base}/repos/acme/widgets", headers=HEADERS, timeout=5).status_code

    return {"propose_fix": propose_fix, "nightly_check": nightly_check}


@pytest.fixture
def recorded(engine: Toolpass, github: FakeGitHub, tmp_path: Path) -> Path:
    path = tmp_path / "toolpass-tools.yaml"
    kit = Toolkit(permissions=engine, record=path, audit=[])
    t = tools(kit, github)
    with Session("dana@example.com").active():
        assert t["propose_fix"]("acme/widgets", "README.md") == 201
        t["nightly_check"]()
    intercept.uninstall()
    github.requests.clear()
    github.repos["acme/widgets"].pulls.clear()
    return path


def test_recording_turns_arguments_into_templates(recorded: Path, github: FakeGitHub) -> None:
    data = json.loads(recorded.read_text())
    fix = data["tools"]["propose_fix"]
    assert fix["effect"] == "write"
    assert fix["hosts"] == [f"http://127.0.0.1:{github.port}"]
    assert fix["actions"] == [
        {
            "connection": "github",
            "action": "contents.read",
            "resource": "repo:{repo}",
            "as": "agent",
        },
        {"connection": "github", "action": "pr.create", "resource": "repo:{repo}", "as": "user"},
    ]
    nightly = data["tools"]["nightly_check"]
    assert nightly["actions"][0]["resource"] == "repo:acme/widgets"  # runtime-only: a literal
    assert nightly["effect"] == "read"


def test_records_merge_across_runs_and_writers(
    engine: Toolpass, github: FakeGitHub, tmp_path: Path
) -> None:
    github.add_repo("acme/gadgets", {"dana": "write"})
    path = tmp_path / "tools.yaml"
    kits = [Toolkit(permissions=engine, record=path, audit=[]) for _ in range(2)]
    fns = [tools(k, github)["nightly_check"] for k in kits]

    def run(fn: Any) -> None:
        with Session("dana@example.com").active():
            for _ in range(5):
                fn()

    threads = [threading.Thread(target=run, args=(f,)) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data = json.loads(path.read_text())  # whole and valid after concurrent writers
    assert len(data["tools"]["nightly_check"]["actions"]) == 1
    intercept.uninstall()


@pytest.fixture
def held(engine: Toolpass, github: FakeGitHub, recorded: Path) -> dict[str, Any]:
    kit = Toolkit(permissions=engine, entitlements=recorded, limits={"write": 1}, audit=[])
    yield tools(kit, github) | {"kit": kit}
    intercept.uninstall()


def refused(call: Any) -> str:
    with pytest.raises(ToolRefused) as info:
        call()
    return info.value.code


def test_user_actions_are_checked_before_the_body(held: dict[str, Any], github: FakeGitHub) -> None:
    with Session("rory@example.com").active():
        assert refused(lambda: held["propose_fix"]("acme/widgets", "README.md")) == (
            "not_authorized"
        )
    assert not any("/contents/" in r.path for r in github.requests)  # not even the read ran
    with Session("dana@example.com").active():
        assert held["propose_fix"]("acme/widgets", "README.md") == 201
    assert posted(github) == ["/repos/acme/widgets/pulls"]


def test_limits_follow_the_strongest_recorded_effect(
    held: dict[str, Any], github: FakeGitHub
) -> None:
    with Session("dana@example.com").active():
        held["propose_fix"]("acme/widgets", "README.md")
        assert refused(lambda: held["propose_fix"]("acme/widgets", "README.md")) == (
            "limit_exceeded"
        )
    assert len(posted(github)) == 1


def test_an_unrecorded_action_is_refused_at_the_wire(
    held: dict[str, Any], github: FakeGitHub
) -> None:
    kit = held["kit"]

    @kit.tool(name="nightly_check")
    def nightly_check() -> int:
        url = f"{github.api_url}/repos/acme/widgets"
        return requests.delete(url, headers=HEADERS, timeout=5).status_code

    with Session("dana@example.com").active():
        assert refused(nightly_check) == "unentitled_action"
    assert not any(r.method == "DELETE" for r in github.requests)


def test_a_runtime_resource_is_a_literal_or_a_glob(
    held: dict[str, Any], engine: Toolpass, github: FakeGitHub, recorded: Path
) -> None:
    github.add_repo("acme/gadgets", {"dana": "read"})
    kit = held["kit"]

    @kit.tool(name="nightly_check")
    def nightly_elsewhere() -> int:
        url = f"{github.api_url}/repos/acme/gadgets"
        return requests.get(url, headers=HEADERS, timeout=5).status_code

    with Session("dana@example.com").active():
        assert held["nightly_check"]() == 200
        assert refused(nightly_elsewhere) == "unentitled_action"
    data = json.loads(recorded.read_text())
    data["tools"]["nightly_check"]["actions"][0]["resource"] = "repo:acme/*"
    recorded.write_text(json.dumps(data))
    globbed = Toolkit(permissions=engine, entitlements=recorded, audit=[])
    fn = globbed.tool(name="nightly_check")(nightly_elsewhere.__wrapped__)
    with Session("dana@example.com").active():
        assert fn() == 200


def test_hosts_effects_and_strict(
    held: dict[str, Any], engine: Toolpass, github: FakeGitHub, recorded: Path
) -> None:
    kit = held["kit"]

    @kit.secured_tool(effect="read", name="propose_fix")
    def says_read(repo: str, path: str) -> str:
        return "never"

    @kit.tool(name="nightly_check")
    def elsewhere() -> int:
        return requests.get("http://localhost:9/repos/acme/widgets", timeout=5).status_code

    @kit.tool()
    def unknown_tool() -> str:
        return "ran"

    strict = Toolkit(permissions=engine, entitlements=recorded, strict=True, audit=[])
    with Session("dana@example.com").active():
        assert refused(lambda: says_read("acme/widgets", "README.md")) == "effect_mismatch"
        assert refused(elsewhere) == "unknown_host"
        assert unknown_tool() == "ran"  # not strict: a tool missing from the file runs
        assert refused(strict.tool(name="unknown_tool")(lambda: "ran")) == "unentitled_action"
