"""The kit's check prelude (``asked``), cache lifetimes read from the keys that declare them
(``ttl_key``, ``Cache.option``), and the engine refusing a key below its ``minimum``."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.server import FakeServer
from hypothesis import given
from hypothesis import strategies as st
from toolpass.engine.config import parse_connections
from toolpass.integrations._kit import Asked, Cache, Target, UserIds, asked, kinds_of, ttl_key
from toolpass.integrations.base import Action, Decision, Integration, ProbeResult
from toolpass.wire.errors import ConfigError
from toolpass.wire.identity import IdentitySettings
from toolpass.wire.keys import ConfigKey, ConnectionConfig

ID = re.compile(r"[A-Z0-9]{2,20}")
READ = Action("things.read", "Read a thing.", "read", terms={"kinds": {"thing": ID}, "x": 1})


class Kit(Integration):
    """A system declaring one action, one lifetime and its user ids."""

    name = "kit"
    description = "a system for the kit's tests"
    actions = (READ,)
    keys = (
        ttl_key("user", "a user's role and groups", 300.0),
        ConfigKey("page_size", "Items a page.", default=100, minimum=1, maximum=1000),
        ConfigKey(
            "auth",
            "How the engine signs in.",
            default="none",
            choices=("none", "token", "oauth"),
            needs={"token": ("token",), "oauth": ("client_id", "client_secret")},
        ),
        ConfigKey("token", "A token.", secret=True),
        ConfigKey("client_id", "A client id."),
        ConfigKey("client_secret", "A client secret.", secret=True),
    )

    def check(self, user: str, action: str, resource: str) -> Decision:
        return Decision.deny("never asked")

    def probe(self) -> ProbeResult:
        return ProbeResult(True, "")


@pytest.fixture
def kit() -> Iterator[Kit]:
    users = {"dana@example.com": "PDANA01", "rory@example.com": "rory@example.com"}
    identity = IdentitySettings(mode="users", users=users)
    with FakeServer() as fake:
        system = Kit(ConnectionConfig("kit", Kit, fake.url, identity=identity))
        yield system
        system.http.close()


IDS = UserIds(ID, "a kit user id")


# --- the prelude ---------------------------------------------------------------------------
def test_what_is_asked_is_the_declared_action_its_target_and_the_mapped_user(kit: Kit) -> None:
    found = asked(kit, "things.read", "thing:T1", "dana@example.com", IDS)
    assert found == Asked(READ, Target("thing", "T1"), "PDANA01")
    assert isinstance(found, Asked)
    assert found.terms["x"] == 1
    assert asked(kit, "things.read", "thing:T1") == Asked(READ, Target("thing", "T1"), "")
    plain = asked(kit, "things.read", "thing:T1", "rory@example.com")  # no ids: any shape
    assert isinstance(plain, Asked)
    assert plain.uid == "rory@example.com"


@pytest.mark.parametrize(
    ("action", "resource", "user", "cause", "reason"),
    [
        ("things.write", "thing:T1", "dana@example.com", "resource", "kit has no action"),
        ("things.read", "thing:t1", "dana@example.com", "resource", "asked on thing:ID"),
        ("things.read", "thing:T1", "rory@example.com", "identity", "not a kit user id"),
    ],
)
def test_the_first_step_that_cannot_answer_is_unknown(
    kit: Kit, action: str, resource: str, user: str, cause: str, reason: str
) -> None:
    found = asked(kit, action, resource, user, IDS)
    assert isinstance(found, Decision)
    assert (found.decision, found.cause) == ("unknown", cause)
    assert reason in found.reason


# --- lifetimes -----------------------------------------------------------------------------
def test_a_lifetime_key_is_written_in_one_line() -> None:
    key = Kit.keys[0]
    assert key.name == "user_cache_ttl"
    assert key.description == "Seconds a user's role and groups are kept (0: never)."
    assert (key.default, key.kind, key.minimum) == (300.0, "float", 0.0)


def connection(**options: Any) -> dict[str, Any]:
    return {"id": "k", "integration": Kit, "url": "https://kit.example.com", **options}


@given(st.floats(allow_nan=True, allow_infinity=False) | st.integers(-(10**6), 10**6))
def test_the_engine_refuses_a_lifetime_below_zero(seconds: float) -> None:
    if math.isnan(seconds) or seconds < 0:
        with pytest.raises(ConfigError, match="key 'user_cache_ttl': must be 0 or more seconds"):
            parse_connections([connection(user_cache_ttl=seconds)])
    else:
        (parsed,) = parse_connections([connection(user_cache_ttl=seconds)])
        assert parsed.options["user_cache_ttl"] == seconds


def test_a_cache_lives_as_long_as_its_option_says(kit: Kit) -> None:
    loads: list[int] = []
    kept: Cache[str, int] = Cache.option(kit, "user_cache_ttl")  # the key's default: 300 s
    assert [kept.get("a", lambda: loads.append(1) or len(loads)) for _ in "ab"] == [1, 1]
    (parsed,) = parse_connections([connection(user_cache_ttl=0)])
    never = Kit(parsed)
    loads.clear()
    users: Cache[str, int] = Cache.option(never, "user_cache_ttl")
    assert [users.get("a", lambda: loads.append(1) or len(loads)) for _ in "ab"] == [1, 2]
    never.http.close()
    with pytest.raises(ValueError, match="kit declares no option role_cache_ttl"):
        Cache.option(kit, "role_cache_ttl")


def test_every_declared_kind_is_read_before_the_action_is_known() -> None:
    kinds = kinds_of("toolpass.integrations.pagerduty")
    assert kinds["account"] is None
    incident = kinds["incident"]
    assert incident is not None
    assert incident.fullmatch("PABC123")
    assert not incident.fullmatch("pabc")


@given(st.integers(-5, 2000))
def test_the_engine_refuses_a_number_outside_its_keys_bounds(size: int) -> None:
    if 1 <= size <= 1000:
        (parsed,) = parse_connections([connection(page_size=size)])
        assert parsed.options["page_size"] == size
    else:
        with pytest.raises(ConfigError, match=r"key 'page_size': must be between 1 and 1000$"):
            parse_connections([connection(page_size=size)])


@pytest.mark.parametrize(
    ("options", "missing"),
    [
        ({"auth": "token"}, "auth token needs token"),
        ({"auth": "oauth", "client_secret": "env:S"}, "'client_id': auth oauth needs client_id"),
        ({"auth": "oauth", "client_id": "c"}, "'client_secret': auth oauth needs client_secret"),
    ],
)
def test_a_choice_without_a_key_it_needs_is_refused(options: dict[str, Any], missing: str) -> None:
    with pytest.raises(ConfigError, match=missing):
        parse_connections([connection(**options)])


def test_a_choice_with_the_keys_it_needs_is_taken() -> None:
    for options in ({}, {"auth": "token", "token": "env:T"}):
        (parsed,) = parse_connections([connection(**options)])
        assert parsed.options["auth"] == options.get("auth", "none")
