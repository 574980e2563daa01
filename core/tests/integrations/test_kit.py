"""The integration kit (``integrations/_kit.py``): the paginator, the issued-token helper,
typed caches, declared resource kinds and declared user ids, against a server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeServer, Reply, Request
from hypothesis import given
from hypothesis import strategies as st
from toolpass.integrations._kit import (
    Cache,
    IssuedToken,
    Target,
    UserIds,
    mapped_user,
    paged,
    target,
    token_from,
)
from toolpass.integrations.base import (
    Action,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.wire.fresh import fresh_lookups
from toolpass.wire.identity import IdentitySettings
from toolpass.wire.keys import ConnectionConfig


class Kit(Integration):
    """A system that only lends the kit its wire."""

    name = "kit"
    description = "a system for the kit's tests"

    def check(self, user: str, action: str, resource: str) -> Decision:
        return Decision.deny("never asked")

    def probe(self) -> ProbeResult:
        return ProbeResult(True, "")


OPEN: list[Kit] = []


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake
    while OPEN:
        OPEN.pop().http.close()


def system(server: FakeServer, **identity: Any) -> Kit:
    settings = IdentitySettings(**identity) if identity else IdentitySettings()
    OPEN.append(Kit(ConnectionConfig("kit", Kit, server.url, identity=settings)))
    return OPEN[-1]


# --- issued tokens ---------------------------------------------------------------------------
def token_endpoint(server: FakeServer, expires_in: int = 3600) -> list[Request]:
    """A token endpoint that is slow to answer (so concurrent callers overlap), counting."""
    asked: list[Request] = []

    @server.route("POST", "/token")
    def token(request: Request) -> dict[str, Any]:
        asked.append(request)
        time.sleep(0.2)
        return {"access_token": f"token-{len(asked)}", "expires_in": expires_in}

    return asked


def issuer(kit: Kit) -> IssuedToken:
    form = {"grant_type": "client_credentials", "client_id": "id", "client_secret": "s e/cret"}
    return IssuedToken(kit, lambda: token_from(kit, "/token", form, who="the test endpoint"))


def test_an_issued_token_is_fetched_once_by_concurrent_callers(server: FakeServer) -> None:
    asked = token_endpoint(server)
    tokens = issuer(system(server))
    got: list[str] = []
    start = threading.Barrier(8)

    def call() -> None:
        start.wait()
        got.append(tokens.get())

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == ["token-1"] * 8
    assert len(asked) == 1
    assert asked[0].body == b"grant_type=client_credentials&client_id=id&client_secret=s+e%2Fcret"


def test_an_issued_token_is_refreshed_when_due_and_after_a_rejection(server: FakeServer) -> None:
    asked = token_endpoint(server)
    kit = system(server)
    tokens = issuer(kit)
    kit.issued = ("stale", time.monotonic() - 1)
    assert tokens.get() == "token-1"
    assert kit.issued is not None
    assert kit.issued[1] > time.monotonic() + 3000
    tokens.drop("stale")  # an older token rejected: the newer one stays
    assert tokens.get() == "token-1"
    tokens.drop("token-1")
    assert tokens.get() == "token-2"
    assert len(asked) == 2


def test_an_issued_token_never_appears_in_a_reason(server: FakeServer) -> None:
    token_endpoint(server)
    kit = system(server)
    token = issuer(kit).get()
    server.fail(403, body={"message": f"the token {token} may not"})
    with pytest.raises(LookupFailed) as raised:
        kit.get_json("/x", what="read x")
    assert token not in str(raised.value)


def test_a_fetch_that_fails_may_drop_the_token_it_replaces(server: FakeServer) -> None:
    """A system whose failure handling drops the held token (Vault's) does so from inside
    the fetch, under the helper's lock: no deadlock."""
    kit = system(server)
    tokens: IssuedToken

    def fetch() -> tuple[str, float]:
        tokens.drop("old")
        raise LookupFailed("the login was refused")

    tokens = IssuedToken(kit, fetch)
    kit.issued = ("old", time.monotonic() - 1)
    failed: list[LookupFailed] = []

    def get() -> None:
        try:
            tokens.get()
        except LookupFailed as e:
            failed.append(e)

    done = threading.Thread(target=get, daemon=True)
    done.start()
    done.join(5)
    assert not done.is_alive()
    assert len(failed) == 1
    assert kit.issued is None


def test_a_client_may_authenticate_with_http_basic(server: FakeServer) -> None:
    asked = token_endpoint(server)
    kit = system(server)
    form = {"grant_type": "client_credentials"}
    token = token_from(kit, "/token", form, who="the endpoint", basic=("id", "s:cret"))
    assert token[0] == "token-1"
    assert asked[0].headers["authorization"] == "Basic aWQ6czpjcmV0"
    assert asked[0].body == b"grant_type=client_credentials"


def test_a_token_endpoint_without_a_token_fails(server: FakeServer) -> None:
    server.route("POST", "/token")(lambda request: {"token_type": "bearer"})
    with pytest.raises(LookupFailed, match="the test endpoint answered without access_token"):
        issuer(system(server)).get()


# --- the paginator -----------------------------------------------------------------------
ITEMS = list(range(23))


def pages_of(server: FakeServer, style: str) -> None:
    @server.route("GET", "/items")
    def items(request: Request) -> Reply:
        at = int(request.arg("offset") or request.arg("after") or request.arg("at") or 0)
        page = ITEMS[at : at + 10]
        more = at + 10 < len(ITEMS)
        body: dict[str, Any] = {"items": page}
        headers: dict[str, str] = {}
        if style == "offset":
            body["more"] = more
        elif style == "cursor" and more:
            body["meta"] = {"next_cursor": str(at + 10)}
        elif style == "next_url" and more:
            body["next"] = f"{server.url}/items?at={at + 10}"
        elif style == "link" and more:
            headers["Link"] = f'<{server.url}/items?at={at + 10}>; rel="next", <x>; rel="last"'
        return Reply(200, body, headers)


@pytest.mark.parametrize("style", ["offset", "cursor", "next_url", "link"])
def test_the_paginator_reads_every_page(server: FakeServer, style: Any) -> None:
    pages_of(server, style)
    kit = system(server)
    found = paged(
        kit,
        "/items",
        what="list items",
        items="items",
        style=style,
        size=10,
        too_many="too many items",
        cursor="after",
        next_at="meta.next_cursor" if style == "cursor" else "next",
    )
    assert list(found) == ITEMS
    assert len(server.requests) == 3


@pytest.mark.parametrize("style", ["offset", "cursor", "next_url", "link"])
def test_the_paginator_refuses_to_guess_past_its_page_limit(server: FakeServer, style: Any) -> None:
    pages_of(server, style)
    found = paged(
        system(server),
        "/items",
        what="list items",
        items="items",
        style=style,
        size=10,
        pages=2,
        too_many="too many items",
        cursor="after",
        next_at="meta.next_cursor" if style == "cursor" else "next",
    )
    with pytest.raises(LookupFailed, match="too many items"):
        list(found)


def test_a_page_without_its_items_fails(server: FakeServer) -> None:
    server.route("GET", "/items")(lambda request: {"things": []})
    found = paged(system(server), "/items", what="list items", items="items", style="offset",
                  too_many="")  # fmt: skip
    with pytest.raises(LookupFailed, match="kit's answer to list items has no items list"):
        list(found)


@pytest.mark.parametrize("meta", [{"next_cursor": 7}, "x", {"next_cursor": ["c"]}])
def test_a_malformed_cursor_fails_rather_than_ending_the_list(
    server: FakeServer, meta: Any
) -> None:
    server.route("GET", "/items")(lambda request: {"items": [1], "meta": meta})
    found = paged(system(server), "/items", what="list items", items="items", style="cursor",
                  next_at="meta.next_cursor", too_many="")  # fmt: skip
    with pytest.raises(LookupFailed, match=r"has a malformed meta\.next_cursor"):
        list(found)


@pytest.mark.parametrize("style", ["next_url", "link"])
def test_a_next_page_on_another_host_is_never_asked(server: FakeServer, style: Any) -> None:
    elsewhere = "http://127.0.0.2:9/items?at=10"

    @server.route("GET", "/items")
    def items(request: Request) -> Reply:
        link = {"Link": f'<{elsewhere}>; rel="next"'} if style == "link" else {}
        return Reply(200, {"items": [1], "next": elsewhere}, link)

    found = paged(system(server), "/items", what="list items", items="items", style=style,
                  too_many="")  # fmt: skip
    with pytest.raises(LookupFailed, match="kit's next page for list items links to another origin"):
        list(found)
    assert len(server.requests) == 1


# --- caches ------------------------------------------------------------------------------
def test_a_cache_loads_once_and_never_answers_a_fresh_check() -> None:
    loads: list[str] = []
    cache: Cache[str, int] = Cache(lambda: 60.0)

    def load() -> int:
        loads.append("x")
        return len(loads)

    assert cache.get("a", load) == 1
    assert cache.get("a", load) == 1
    with fresh_lookups(True):
        assert cache.get("a", load) == 2
    assert cache.get("a", load) == 2  # what the fresh check learned is kept
    assert Cache[str, int](lambda: 0.0).get("a", load) == 3
    assert len(loads) == 3
    nothing: Cache[str, None] = Cache(lambda: 60.0)
    assert nothing.get("absent", lambda: loads.append("y")) is None
    assert nothing.get("absent", lambda: loads.append("y")) is None  # None is kept too
    assert len(loads) == 4


# --- declared resource kinds -------------------------------------------------------------
ID = re.compile(r"[A-Z0-9]{2,20}")
KINDS = {"incident": ID, "service": ID, "account": None}
READ = Action("incidents.read", "Read.", "read", terms={"kinds": KINDS})


@given(st.sampled_from([*KINDS, "team", ""]), st.sampled_from(["", ":", ":"]), st.text())
def test_a_resource_is_its_declared_kind_and_id_or_refused(kind: str, sep: str, oid: str) -> None:
    resource = kind + sep + oid
    found = target(READ, resource)
    kind, _, oid = resource.partition(":")
    pattern = KINDS.get(kind, ID)
    fits = kind in KINDS and (pattern.fullmatch(oid) if pattern else ":" not in resource)
    if fits:
        assert found == Target(kind, oid)
    else:
        assert isinstance(found, Decision)
        assert found.cause == "resource"
        assert found.reason == (
            f"incidents.read is asked on incident:ID or service:ID or account, not {resource!r}"
        )


def test_some_resources_are_accepted() -> None:
    assert target(READ, "incident:PABC1") == Target("incident", "PABC1")
    assert target(READ, "account") == Target("account", "")
    assert isinstance(target(READ, "account:"), Decision)


def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: Any) -> str:
    package = tmp_path / "kit_tables"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "actions.json").write_text(json.dumps(content))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("kit_tables", None)
    return "kit_tables"


def test_an_actions_table_declares_its_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {"name": "a.read", "effect": "read", "description": "d", "requires": "r"}
    package = table(
        tmp_path,
        monkeypatch,
        {"kinds": {"thing": "[a-z]+", "site": None}, "actions": [{**row, "kinds": ["thing"]}]},
    )
    (action,) = load_actions(package)
    assert target(action, "thing:abc") == Target("thing", "abc")
    assert isinstance(target(action, "site"), Decision)


def test_a_row_naming_an_undeclared_kind_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {"name": "a.read", "effect": "read", "description": "d", "requires": "r"}
    package = table(
        tmp_path, monkeypatch, {"kinds": {"thing": "[a-z]+"}, "actions": [{**row, "kinds": ["x"]}]}
    )
    with pytest.raises(ValueError, match=r"a\.read: a kind missing from kinds"):
        load_actions(package)


# --- declared user ids -------------------------------------------------------------------
def test_a_user_mapped_to_no_id_of_the_system_is_unknown(server: FakeServer) -> None:
    users = {"dana@example.com": "PDANA01", "rory@example.com": "rory@example.com"}
    kit = system(server, mode="users", users=users)
    ids = UserIds(ID, "a test user id")
    assert mapped_user(kit, "dana@example.com", ids) == "PDANA01"
    refused = mapped_user(kit, "rory@example.com", ids)
    assert isinstance(refused, Decision)
    assert refused.cause == "identity"
    assert refused.reason == "rory@example.com maps to 'rory@example.com', not a test user id"
