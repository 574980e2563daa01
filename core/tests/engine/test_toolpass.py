from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import pytest
from fakes.server import FakeServer
from toolpass.engine import Decision, PermissionDenied, Toolpass, literal
from toolpass.integrations.base import ProbeResult

from .conftest import Demo, demo_connection

READ = ("dana@example.com", "demo", "item.read", "item:1")
WRITE = ("dana@example.com", "demo", "item.write", "item:1")


def test_allow_and_deny(tp: Toolpass, fake: FakeServer) -> None:
    allowed = tp.check(*READ)
    assert allowed == Decision(
        "allow", "d1 has the read grant", "dana@example.com", "demo", "item.read", "item:1"
    )
    denied = tp.check(*WRITE)
    assert (denied.decision, denied.reason, denied.allowed) == (
        "deny",
        "d1 lacks the write grant",
        False,
    )
    grant = fake.seen(path="/grants/d1")[0]
    assert grant.query == {"resource": ["item:1"]}
    assert grant.headers["authorization"] == "Bearer s3cret"


def test_allowed_and_require(tp: Toolpass) -> None:
    assert tp.allowed(*READ) is True
    assert tp.allowed(*WRITE) is False
    assert tp.require(*READ).decision == "allow"
    with pytest.raises(PermissionDenied) as info:
        tp.require(*WRITE)
    assert info.value.decision.decision == "deny"
    assert "lacks the write grant" in str(info.value)


@pytest.mark.parametrize(
    ("inject", "reason"),
    [
        (
            lambda f: f.fail(401, body={"message": "Bad credentials"}),
            r"demo: demo rejected the engine's credential \(HTTP 401\) to the grant look-up: "
            "Bad credentials",
        ),
        (lambda f: f.fail(403), r"refused the engine's credential \(HTTP 403\)"),
        (
            lambda f: f.fail(404, body={"message": "Not Found"}),
            r"unexpected answer \(HTTP 404\) to the grant look-up: Not Found",
        ),
        (
            lambda f: f.fail(429, retry_after=30),
            r"rate-limited the engine \(retry after 30s\) \(HTTP 429\)",
        ),
        (lambda f: f.fail(502), r"demo failed \(HTTP 502\)"),
        (lambda f: f.not_json(), r"not JSON"),
        (lambda f: f.fail(200, body={"grants": "all"}), r"no grants list"),
        (lambda f: f.slow(2), r"no answer within|time budget"),
    ],
)
def test_every_failure_is_unknown_with_a_reason(
    fake: FakeServer, token: str, inject: Any, reason: str
) -> None:
    with Toolpass([demo_connection(fake.url, timeout=0.5)]) as tp:
        tp.check("dana@example.com", "demo", "item.read", "item:0")  # warm the identity cache
        inject(fake)
        decision = tp.check(*READ)
    assert decision.decision == "unknown"
    assert re.search(reason, decision.reason), decision.reason
    assert not decision.allowed


def test_identity_failures_are_unknown(tp: Toolpass, fake: FakeServer) -> None:
    nobody = tp.check("nobody@example.com", "demo", "item.read", "item:1")
    assert (nobody.decision, nobody.reason) == (
        "unknown",
        "demo: nobody@example.com maps to no demo user (lookup)",
    )
    twins = tp.check("twin@example.com", "demo", "item.read", "item:1")
    assert "maps to 2 demo users" in twins.reason
    assert fake.seen(path="/grants/.*") == []


def test_unknown_connection_action_and_arguments(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "nope", "item.read", "x").reason == (
        "no connection 'nope' is configured (demo)"
    )
    assert tp.check("dana@example.com", "demo", "item.eat", "x").reason == (
        "demo (demo) has no action 'item.eat'"
    )
    assert tp.check("", "demo", "item.read", "x").decision == "unknown"
    assert tp.check("dana@example.com", "demo", "item.read", "").decision == "unknown"
    assert tp.configured("demo", "item.read")
    assert not tp.configured("demo", "item.eat")


def test_missing_secret_is_unknown_naming_the_reference(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEMO_TOKEN", raising=False)
    with Toolpass([demo_connection(fake.url)]) as tp:
        decision = tp.check(*READ)
    assert decision.decision == "unknown"
    assert "env:DEMO_TOKEN: environment variable is not set" in decision.reason


def test_decisions_are_cached_and_fresh_asks_again(tp: Toolpass, fake: FakeServer) -> None:
    first, second = tp.check(*READ), tp.check(*READ)
    assert (first.cached, second.cached) == (False, True)
    assert second.user == "dana@example.com"
    assert len(fake.seen(path="/grants/d1")) == 1
    fresh = tp.check(*READ, fresh=True)
    assert not fresh.cached
    assert len(fake.seen(path="/grants/d1")) == 2
    tp.check(*WRITE), tp.check(*WRITE)
    assert len(fake.seen(path="/grants/d1")) == 3  # deny is cached too


def test_unknown_is_never_cached(tp: Toolpass, fake: FakeServer) -> None:
    fake.fail(503, path="/grants/.*")
    assert tp.check(*READ).decision == "unknown"
    assert tp.check(*READ).decision == "allow"


def test_ttls_per_connection(fake: FakeServer, token: str) -> None:
    with Toolpass([demo_connection(fake.url, cache_ttl_allow=0)]) as tp:
        tp.check(*READ), tp.check(*READ)
        tp.check(*WRITE), tp.check(*WRITE)
    assert len(fake.seen(path="/grants/d1")) == 3


def test_concurrent_identical_checks_make_one_look_up(tp: Toolpass, fake: FakeServer) -> None:
    tp.check("dana@example.com", "demo", "item.read", "warm")
    fake.slow(0.2, path="/grants/d1")
    results: list[Decision] = []
    threads = [threading.Thread(target=lambda: results.append(tp.check(*READ))) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.decision for r in results] == ["allow"] * 12
    assert len(fake.seen(path="/grants/d1")) == 2


def test_the_budget_covers_all_requests_of_a_check(fake: FakeServer, token: str) -> None:
    fake.slow(0.3, path="/users")
    fake.slow(0.3, path="/grants/.*")
    with Toolpass([demo_connection(fake.url, timeout=0.5)]) as tp:
        decision = tp.check(*READ)
    assert decision.decision == "unknown"
    assert "no answer within" in decision.reason or "time budget" in decision.reason


def test_an_integration_bug_is_unknown_not_an_exception(fake: FakeServer, token: str) -> None:
    class Buggy(Demo):
        def check(self, user: str, action: str, resource: str) -> Decision:
            return {}["boom"]  # type: ignore[no-any-return]

    class Nonsense(Demo):
        def check(self, user: str, action: str, resource: str) -> Decision:
            return "allow"  # type: ignore[return-value]

    with Toolpass(
        [
            demo_connection(fake.url, integration=Buggy, id="b"),
            demo_connection(fake.url, integration=Nonsense, id="n"),
        ]
    ) as tp:
        buggy = tp.check("dana@example.com", "b", "item.read", "x")
        nonsense = tp.check("dana@example.com", "n", "item.read", "x")
    assert buggy.decision == "unknown"
    assert "failed unexpectedly (KeyError" in buggy.reason
    assert nonsense.decision == "unknown"
    assert "answered nonsense" in nonsense.reason


async def test_acheck_and_arequire(tp: Toolpass) -> None:
    decisions = await asyncio.gather(*(tp.acheck(*READ) for _ in range(5)))
    assert all(d.allowed for d in decisions)
    assert (await tp.acheck(*READ)).cached
    assert (await tp.arequire(*READ)).allowed
    with pytest.raises(PermissionDenied):
        await tp.arequire(*WRITE)


def test_probe(tp: Toolpass, fake: FakeServer) -> None:
    assert tp.probe() == {"demo": ProbeResult(True, "signed in as engine")}
    fake.fail(401, path="/me")
    (result,) = tp.probe("demo").values()
    assert not result.ok
    assert "HTTP 401" in result.detail
    assert tp.probe("nope") == {"nope": ProbeResult(False, "no such connection")}


def test_literal_secret_in_code(fake: FakeServer) -> None:
    with Toolpass([demo_connection(fake.url, token=literal("s3cret"))]) as tp:
        assert tp.check(*READ).allowed
