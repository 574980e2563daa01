from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeServer, Reply, Request
from toolpass.engine import LookupFailed
from toolpass.engine.http import HTTPClient
from toolpass.engine.identity import IdentityResolver, IdentitySettings, parse_identity


def resolver(settings: IdentitySettings, **kw: Any) -> IdentityResolver:
    return IdentityResolver(settings, system="demo", connection="c1", **kw)


def parse(raw: Any, modes: Sequence[str] = ("lookup",)) -> IdentitySettings:
    return parse_identity(raw, modes, in_code=True)


def test_template_limited_to_domains() -> None:
    r = resolver(parse({"mode": "template", "template": "{local}-gh", "domains": ["Example.com"]}))
    assert r.resolve("Dana@EXAMPLE.com") == "dana-gh"
    with pytest.raises(LookupFailed, match="not in an email domain"):
        r.resolve("dana@evil.example")


def test_users_mapping_is_exact_and_overrides_every_mode() -> None:
    r = resolver(parse({"mode": "users", "users": {"Dana@example.com": "dana"}}))
    assert r.resolve("dana@example.com") == "dana"
    with pytest.raises(LookupFailed, match="maps to no demo user"):
        r.resolve("dan@example.com")
    with pytest.raises(LookupFailed, match="maps to no demo user"):
        r.resolve("dana@example.co")
    calls: list[str] = []
    r = resolver(
        parse({"mode": "callable", "resolve": calls.append, "users": {"bot@example.com": "bot"}})
    )
    assert r.resolve("bot@example.com") == "bot"
    assert calls == []


@pytest.mark.parametrize(
    "email",
    ["", "dana", "@example.com", "dana@", "a@b@example.com", "da na@example.com", "d\x00@x.io"],
)
def test_not_an_email(email: str) -> None:
    with pytest.raises(LookupFailed, match="not an email address"):
        resolver(parse({"mode": "users"})).resolve(email)


def test_callable_none_one_several_and_cached() -> None:
    answers = {"one@x.io": "u1", "many@x.io": ["a", "b"], "dup@x.io": ["a", "a"]}
    calls: list[str] = []

    def find(email: str) -> Any:
        calls.append(email)
        return answers.get(email)

    r = resolver(parse(find))
    assert r.resolve("one@x.io") == "u1"
    assert r.resolve("ONE@x.io") == "u1"
    assert calls == ["one@x.io"]
    assert r.resolve("dup@x.io") == "a"
    with pytest.raises(LookupFailed, match=r"maps to 2 demo users .*refusing to guess"):
        r.resolve("many@x.io")
    with pytest.raises(LookupFailed, match="no demo user"):
        r.resolve("none@x.io")
    with pytest.raises(LookupFailed):
        r.resolve("none@x.io")
    assert calls.count("none@x.io") == 2  # no one is never cached


def test_callable_failure_and_bad_names() -> None:
    def broken(email: str) -> str:
        raise RuntimeError("directory down")

    with pytest.raises(LookupFailed, match=r"identity callable failed .*directory down"):
        resolver(parse(broken)).resolve("a@x.io")
    with pytest.raises(LookupFailed, match="invalid demo user name"):
        resolver(parse(lambda e: "two words")).resolve("a@x.io")


def test_system_lookup_mode() -> None:
    modes: list[str] = []

    def lookup(email: str, mode: str) -> list[str]:
        modes.append(mode)
        return ["sys-" + email.split("@")[0]]

    r = resolver(parse(None), lookup=lookup)
    assert r.resolve("kim@x.io") == "sys-kim"
    assert modes == ["lookup"]


def test_mapping_file_is_re_read_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"dana@example.com": "dana"}))
    r = resolver(
        parse_identity(
            {"mode": "file", "file": "users.json"}, (), in_code=False, base_dir=str(tmp_path)
        )
    )
    assert r.resolve("dana@example.com") == "dana"
    path.write_text(json.dumps({"dana@example.com": "dana2", "erin@example.com": "erin"}))
    os.utime(path, ns=(1, 1))
    assert r.resolve("dana@example.com") == "dana2"
    assert r.resolve("erin@example.com") == "erin"


def test_yaml_mapping_file_and_ambiguity(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"
    path.write_text("Dana@example.com: dana\ndana@example.com: dana-other\n")
    r = resolver(parse({"mode": "file", "file": str(path)}))
    with pytest.raises(LookupFailed, match="maps to 2"):
        r.resolve("dana@example.com")


def test_broken_mapping_file(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    r = resolver(parse({"mode": "file", "file": str(path)}))
    with pytest.raises(LookupFailed, match=r"identity file .*users.json"):
        r.resolve("a@x.io")
    path.write_text("[1, 2]")
    with pytest.raises(LookupFailed, match="must be a mapping"):
        r.resolve("a@x.io")
    path.write_text("{nope")
    with pytest.raises(LookupFailed, match="cannot be parsed"):
        r.resolve("a@x.io")


def test_http_identity_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDP_TOKEN", "idp")
    with FakeServer() as idp:

        @idp.route("GET", "/who")
        def who(request: Request) -> Reply | dict[str, Any]:
            assert request.headers["authorization"] == "Bearer idp"
            email = request.arg("email")
            return {
                "dana@x.io": {"user": "dana"},
                "twin@x.io": {"users": ["t1", "t2"]},
                "ghost@x.io": {"user": None},
                "bad@x.io": {"whatever": 1},
            }.get(email or "") or Reply(404, {"error": "no such user"})

        http = HTTPClient()
        settings = parse({"mode": "http", "url": f"{idp.url}/who", "token": "env:IDP_TOKEN"})
        r = resolver(settings, http=http)
        assert r.resolve("dana@x.io") == "dana"
        assert idp.seen()[0].query == {
            "email": ["dana@x.io"],
            "system": ["demo"],
            "connection": ["c1"],
        }
        with pytest.raises(LookupFailed, match="maps to 2"):
            r.resolve("twin@x.io")
        for email in ("ghost@x.io", "nobody@x.io"):
            with pytest.raises(LookupFailed, match="maps to no demo user"):
                r.resolve(email)
        with pytest.raises(LookupFailed, match="neither user nor users"):
            r.resolve("bad@x.io")
        idp.fail(500)
        with pytest.raises(LookupFailed, match="answered HTTP 500"):
            r.resolve("new@x.io")
        r.resolve("dana@x.io")
        assert len(idp.seen(path="/who", method="GET")) == 6  # dana's mapping was cached
        http.close()
