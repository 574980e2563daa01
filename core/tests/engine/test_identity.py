from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeServer, Reply, Request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass.engine import ConfigError, LookupFailed, Toolpass
from toolpass.wire.http import HTTPClient
from toolpass.wire.identity import (
    IdentityResolver,
    IdentitySettings,
    normalize_email,
    parse_identity,
    same_email,
)

from .conftest import demo_connection


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


# One person, one normalised email: case spellings are one person, look-alikes no one.

# ASCII letters and what poses as them once lower-cased, upper-cased, case-folded or
# compatibility-normalised (NFKC).
LOOKALIKES = {
    "k": ["\u212a"],  # KELVIN SIGN: lower() is "k"
    "s": ["\u017f", "\uff53", "\U0001d42c"],  # long s: upper() is "S"; fullwidth; bold
    "i": ["\u0131", "\u0130", "\u2170", "\uff49"],  # dotless i, dotted I, roman numeral one
    "a": ["\uff41", "\u00aa", "\U0001d41a"],  # fullwidth, feminine ordinal, bold
    "e": ["\u212f", "\uff45", "\u2091"],  # script e, fullwidth, subscript
    "m": ["\u217f", "\uff4d"],  # roman numeral one thousand, fullwidth
    "ff": ["\ufb00"],  # ligatures
    "fi": ["\ufb01"],
    "st": ["\ufb06", "\ufb05"],
    "ss": ["\u00df", "\u1e9e"],  # sharp s: upper() and casefold() are "SS"/"ss"
    "@": ["\uff20", "\ufe6b"],
    ".": ["\uff0e", "\u2024"],
}
PEOPLE = {
    "dana@example.com": "d1",
    "kim.skiff@example.com": "d1",
    "missy.fist@example.com": "e1",
}


def people_connection(url: str, **identity: Any) -> dict[str, Any]:
    users = {email.title(): user for email, user in PEOPLE.items()}  # written in any case
    return demo_connection(url, identity={"mode": "users", "users": users, **identity})


@st.composite
def lookalike_emails(draw: st.DrawFn) -> str:
    """One of PEOPLE's emails, in any case, with at least one look-alike in it."""
    email = draw(st.sampled_from(sorted(PEOPLE)))
    spots = [(i, plain) for plain in LOOKALIKES for i in _find_all(email, plain)]
    chosen = draw(st.lists(st.sampled_from(spots), min_size=1, max_size=3, unique=True))
    out = list(email)
    for i, plain in sorted(chosen, reverse=True):
        if all(c is not None for c in out[i : i + len(plain)]):
            out[i : i + len(plain)] = [draw(st.sampled_from(LOOKALIKES[plain]))] + [None] * (
                len(plain) - 1
            )
    cased = [draw(st.sampled_from([c, c.upper()])) if c and c.isascii() else c for c in out]
    return "".join(c for c in cased if c is not None)


def _find_all(text: str, part: str) -> list[int]:
    return [i for i in range(len(text)) if text.startswith(part, i)]


def test_case_spellings_of_one_email_are_one_person(fake: FakeServer, token: str) -> None:
    with Toolpass([people_connection(fake.url)]) as tp:
        for email in ("dana@example.com", "Dana@Example.com", "DANA@EXAMPLE.COM"):
            decision = tp.check(email, "demo", "item.read", "item:1")
            assert (decision.decision, decision.reason) == ("allow", "d1 has the read grant")


@pytest.fixture
def people(fake: FakeServer, token: str) -> Iterator[Toolpass]:
    with Toolpass([people_connection(fake.url, domains=["Example.COM"])]) as engine:
        yield engine


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(email=lookalike_emails())
def test_look_alike_emails_are_refused_never_matched(
    people: Toolpass, fake: FakeServer, email: str
) -> None:
    asked = len(fake.seen(path="/grants/.*"))
    decision = people.check(email, "demo", "item.read", "item:1")
    assert decision.decision == "unknown", email
    assert "email address" in decision.reason  # not a plain one, or not one at all
    assert len(fake.seen(path="/grants/.*")) == asked


def test_the_systems_own_look_up_is_asked_with_the_normalised_email(
    fake: FakeServer, token: str
) -> None:
    with Toolpass([demo_connection(fake.url)]) as tp:
        assert tp.check("Dana@EXAMPLE.com", "demo", "item.read", "item:1").allowed
        refused = tp.check("dana@exampl\u212a.com", "demo", "item.read", "item:1")
    assert refused.decision == "unknown"
    assert "U+212A KELVIN SIGN" in refused.reason
    assert [r.query["email"] for r in fake.seen(path="/users")] == [["dana@example.com"]]


def test_mapping_file_keys_are_normalised_and_look_alike_keys_name_no_one(
    fake: FakeServer, token: str, tmp_path: Path
) -> None:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"Dana@Example.com": "d1", "\u212aim@example.com": "e1"}))
    identity = {"mode": "file", "file": str(path)}
    with Toolpass([demo_connection(fake.url, identity=identity)]) as tp:
        assert tp.check("dana@example.COM", "demo", "item.read", "item:1").allowed
        kim = tp.check("kim@example.com", "demo", "item.write", "item:1")  # not the Kelvin one
    assert (kim.decision, kim.reason) == (
        "unknown",
        "demo: kim@example.com maps to no demo user (file)",
    )


def test_a_callable_is_given_the_normalised_email_and_never_a_look_alike(
    fake: FakeServer, token: str
) -> None:
    asked: list[str] = []

    def resolve(email: str) -> str:
        asked.append(email)
        return "d1"

    with Toolpass(
        [demo_connection(fake.url, identity={"resolve": resolve, "mode": "callable"})]
    ) as tp:
        assert tp.check("Dana@Example.com", "demo", "item.read", "item:1").allowed
        assert (
            tp.check("\uff44ana@example.com", "demo", "item.read", "item:1").decision == "unknown"
        )
    assert asked == ["dana@example.com"]


@pytest.mark.parametrize(
    ("identity", "message"),
    [
        ({"users": {"\u212aim@example.com": "d1"}}, r"identity.users.*KELVIN SIGN"),
        ({"users": {"Dana@x.io": "d1", "dana@X.IO": "d2"}}, r"identity.users.*mapped twice"),
        ({"domains": ["exampl\u212a.com"]}, r"identity.domains.*not a plain email domain"),
    ],
)
def test_look_alikes_and_clashes_in_the_configuration_are_refused(
    fake: FakeServer, token: str, identity: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Toolpass([demo_connection(fake.url, identity={"mode": "users", **identity})])


emails = st.builds(
    lambda local, domain: f"{local}@{domain}.com",
    st.text(st.characters(blacklist_categories=["Cs", "Cc", "Cf", "Zs", "Zl", "Zp"]), min_size=1),
    st.text(st.characters(blacklist_categories=["Cs", "Cc", "Cf", "Zs", "Zl", "Zp"]), min_size=1),
)


@settings(max_examples=500)
@given(email=emails)
def test_normalising_is_stable_and_never_turns_other_characters_into_ascii(email: str) -> None:
    try:
        key = normalize_email(email)
    except LookupFailed:
        return
    assert normalize_email(key) == key
    assert normalize_email(email.upper()) == key or _refused(email.upper())
    ascii_in_key = [c for c in key if c.isascii()]
    assert ascii_in_key == [c.lower() for c in email if c.isascii()]


def _refused(email: str) -> bool:
    try:
        normalize_email(email)
    except LookupFailed:
        return True
    return False


@pytest.mark.parametrize(
    ("found", "same"),
    [
        ("Dana@Example.com", True),
        ("dana@example.com", True),
        ("\uff44ana@example.com", False),  # a fullwidth d
        ("dan\u0430@example.com", False),  # a Cyrillic a: another address
        (None, False),
        ("not an email", False),
    ],
)
def test_an_address_a_system_answers_is_the_same_only_once_normalised(
    found: object, same: bool
) -> None:
    assert same_email(found, "dana@example.com") is same
    assert same_email("\u212aim@example.com", "kim@example.com") is False
