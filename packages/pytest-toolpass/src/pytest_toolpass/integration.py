"""The conformance suite every permission integration passes, written once.

An integration's tests subclass ``IntegrationConformance``, name a check its fake allows
(``user``, ``action``, ``resource``), the system's own id for that user (``system_user``) and
the engine's credential as the fake knows it (``credential``), and provide two things: an
``api`` fixture, the integration's fake seeded and running on 127.0.0.1 (``server(api)``
gives its log and failures on demand: ``fail``, ``slow``, ``not_json``, ``requests``), and
``connection(api, **extra)``, the connection settings pointing at it. A system that does not
speak JSON says how its errors look (``error_body``) and what a reason calls a body it cannot
read (``malformed``); a credential that is never sent as it is (AWS signs with its secret key)
is named all the same, with any other secret of the connection (``other_secrets``), so that
the suite proves none of them is ever read in a reason. The suite then checks
what every integration must do the same way: each failure of the system is ``unknown`` with
a precise reason and never cached, the credential never shows in a reason, the probe, the
catalog, and the shared identity modes. The integration's own tests are its semantics.

Cross-cutting scenarios every system meets in some form are hooks a subclass provides:
``disable_account`` (the user's account is disabled), ``make_read_only`` (the resource is in
a read-only state; returns the write action to try), ``bind_admins`` (the user is an
administrator, and a rule that binds administrators too forbids the check) and ``revoke``
(the user loses the access the check needs). Each must turn the allowed check into no allow;
``revoke`` with ``fresh=True`` at once, past every cache. A hook the system has no analogue
for is left out, and names its reason in ``unsupported`` (scenario -> why): its test is a
skip counted in the report with that reason, never a silent pass. Two deployments sharing a
store (same connection name, other settings) never answer from each other's cache: that one
needs no hook.

A subclass may not override these tests, not even with an override marked ``xfail``
(``test_no_test_is_overridden`` fails it); the plugin counts the skips, with their reasons,
at the end of the run.
"""

from __future__ import annotations

import inspect
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest
from toolpass.engine import Toolpass
from toolpass.integrations import available, get

_EFFECTS = ("read", "write", "destructive")
_SHARED_MODES = ("users", "template", "file", "http", "callable")


class IntegrationConformance:
    """Subclass this in an integration's tests; see the module docstring."""

    #: The integration's name, as ``toolpass.integrations.get`` takes it.
    integration: ClassVar[str]
    #: A check the seeded fake allows.
    user: ClassVar[str]
    action: ClassVar[str]
    resource: ClassVar[str]
    #: The system's own id for ``user``: what every identity mode maps it to.
    system_user: ClassVar[str]
    #: An identity template (``{local}``, ``{domain}``, ``{email}``) mapping ``user`` to
    #: ``system_user``, or None when the system's ids cannot be written as one.
    template: ClassVar[str | None] = None
    #: The engine's credential as sent to the system, or the secret it signs with (never to
    #: be read in a reason).
    credential: ClassVar[str]
    #: Other secrets of the connection (a session token, ...), never to be read either.
    other_secrets: ClassVar[tuple[str, ...]] = ()
    #: What a reason says of an answer whose body is not in the system's format.
    malformed: ClassVar[str] = "not JSON"

    # What a subclass provides.

    @pytest.fixture
    def api(self) -> Iterator[Any]:
        """The integration's fake, seeded so that the check above is allowed."""
        raise NotImplementedError

    def server(self, api: Any) -> Any:
        """The fake HTTP server behind ``api`` (default: ``api`` itself)."""
        return api

    def connection(self, api: Any, **extra: Any) -> dict[str, Any]:
        """The connection settings for ``api``, with ``extra`` keys on top."""
        raise NotImplementedError

    #: Scenarios (``disable_account``, ``make_read_only``, ``bind_admins``, ``revoke``) the
    #: system has no analogue for, each with the reason: their tests are counted skips.
    unsupported: ClassVar[dict[str, str]] = {}

    def disable_account(self, api: Any) -> None:
        """Disable ``user``'s account in the fake."""
        raise NotImplementedError

    def make_read_only(self, api: Any) -> str:
        """Put ``resource`` in a read-only state (archived, locked, ...); answer a write
        action on it that the user could do otherwise."""
        raise NotImplementedError

    def bind_admins(self, api: Any) -> None:
        """Make ``user`` an administrator, and add a rule that binds administrators too (a
        protection, a policy above the account) forbidding the check."""
        raise NotImplementedError

    def revoke(self, api: Any) -> None:
        """Take away the access the allowed check needs."""
        raise NotImplementedError

    def error_body(self, text: str) -> Any:
        """An error answer of the system saying ``text`` (default: JSON, every common key)."""
        return {"ok": False, "error": text, "message": text, "errorMessages": [text]}

    # Helpers.

    def engine(self, api: Any, **extra: Any) -> Toolpass:
        return Toolpass([self.connection(api, **extra)])

    def ask(self, tp: Toolpass, api: Any, user: str | None = None, **kw: Any) -> Any:
        conn = self.connection(api)["id"]
        return tp.check(user or self.user, conn, self.action, self.resource, **kw)

    def unknown(self, api: Any, **extra: Any) -> str:
        """The reason of the check, which must be unknown."""
        with self.engine(api, **extra) as tp:
            d = self.ask(tp, api)
        assert d.decision == "unknown", d.reason
        self.assert_no_secret(d.reason)
        return str(d.reason)

    def assert_no_secret(self, text: str) -> None:
        for secret in (self.credential, *self.other_secrets):
            assert secret not in text

    # The suite: the check and each failure of the system.

    def test_the_allowed_check_allows(self, api: Any) -> None:
        with self.engine(api) as tp:
            d = self.ask(tp, api)
        assert d.decision == "allow", d.reason

    @pytest.mark.parametrize("status", [401, 403])
    def test_a_rejected_credential_is_unknown(self, api: Any, status: int) -> None:
        self.server(api).fail(status, times=1000)
        assert f"HTTP {status}" in self.unknown(api)

    def test_not_found_everywhere_is_unknown(self, api: Any) -> None:
        self.server(api).fail(404, times=1000)
        assert "404" in self.unknown(api)

    @pytest.mark.parametrize("status", [500, 502, 503])
    def test_server_errors_are_unknown(self, api: Any, status: int) -> None:
        self.server(api).fail(status, times=1000)
        assert f"HTTP {status}" in self.unknown(api)

    def test_rate_limiting_is_unknown_says_when_and_is_not_cached(self, api: Any) -> None:
        self.server(api).fail(429, retry_after=30)
        with self.engine(api) as tp:
            d = self.ask(tp, api)
            assert d.decision == "unknown"
            assert "retry after 30" in d.reason
            again = self.ask(tp, api)
        assert again.decision == "allow", again.reason
        assert not again.cached

    def test_a_redirect_is_not_followed(self, api: Any) -> None:
        self.server(api).fail(302, headers={"Location": "http://127.0.0.1:9/"}, times=1000)
        assert "HTTP 302" in self.unknown(api)

    def test_a_slow_answer_is_unknown(self, api: Any) -> None:
        self.server(api).slow(2.0, times=1000)
        reason = self.unknown(api, timeout=0.3)
        assert "no answer" in reason or "budget" in reason

    def test_a_body_that_is_not_json_is_unknown(self, api: Any) -> None:
        self.server(api).not_json(times=1000)
        assert self.malformed in self.unknown(api)

    def test_an_unreachable_system_is_unknown(self, api: Any) -> None:
        self.unknown(api, url=f"http://127.0.0.1:{_closed_port()}")

    def test_tls_to_a_server_that_speaks_none_is_unknown(self, api: Any) -> None:
        port = urlsplit(self.server(api).url).port
        self.unknown(api, url=f"https://127.0.0.1:{port}")

    def test_the_proxy_setting_is_used(self, api: Any) -> None:
        self.unknown(api, proxy_url=f"http://127.0.0.1:{_closed_port()}")

    @pytest.mark.parametrize("status", [200, 400, 401, 403, 404, 429, 500])
    def test_the_credential_never_shows_in_a_reason(self, api: Any, status: int) -> None:
        echo = " ".join(("credential", self.credential, *self.other_secrets, "is not valid"))
        self.server(api).fail(status, body=self.error_body(echo), times=1000)
        self.unknown(api)

    # Cross-cutting scenarios.

    def scenario(self, name: str, api: Any) -> Any:
        """Run the hook ``name``; a hook the subclass leaves out is a skip with its reason."""
        try:
            return getattr(self, name)(api)
        except NotImplementedError:
            reason = self.unsupported.get(name, "the conformance subclass gives no reason")
            pytest.skip(f"{self.integration}: no {name} scenario ({reason})")

    def test_a_disabled_account_is_not_allowed(self, api: Any) -> None:
        self.scenario("disable_account", api)
        with self.engine(api) as tp:
            d = self.ask(tp, api)
        assert not d.allowed, d.reason

    def test_a_resource_in_a_read_only_state_refuses_writes(self, api: Any) -> None:
        write = self.scenario("make_read_only", api)
        with self.engine(api) as tp:
            conn = self.connection(api)["id"]
            d = tp.check(self.user, conn, write, self.resource)
        assert not d.allowed, d.reason

    def test_a_rule_that_binds_admins_binds_them(self, api: Any) -> None:
        self.scenario("bind_admins", api)
        with self.engine(api) as tp:
            d = self.ask(tp, api)
        assert not d.allowed, d.reason

    def test_fresh_after_a_revocation_is_not_allowed(self, api: Any) -> None:
        with self.engine(api) as tp:
            assert self.ask(tp, api).allowed
            self.scenario("revoke", api)
            d = self.ask(tp, api, fresh=True)
        assert not d.allowed, d.reason
        assert not d.cached

    def test_deployments_sharing_a_store_keep_their_own_decisions(
        self, api: Any, tmp_path: Path
    ) -> None:
        """Another deployment names its connection the same, but its system is elsewhere
        (here: nowhere): it must ask it, never answer from the first one's decision."""
        store = f"sqlite:///{tmp_path}/shared.db"
        with Toolpass([self.connection(api)], store=store) as first:
            assert self.ask(first, api).allowed
        elsewhere = self.connection(api, url=f"http://127.0.0.1:{_closed_port()}")
        with Toolpass([elsewhere], store=store) as second:
            d = self.ask(second, api)
        assert d.decision == "unknown", d.reason
        assert not d.cached
        with Toolpass([self.connection(api)], store=store) as again:
            assert self.ask(again, api).cached

    # The probe.

    def test_the_probe_succeeds_with_a_working_credential(self, api: Any) -> None:
        with self.engine(api) as tp:
            (result,) = tp.probe().values()
        assert result.ok, result.detail
        self.assert_no_secret(result.detail)

    def test_the_probe_fails_with_a_rejected_credential(self, api: Any) -> None:
        echo = " ".join(("bad credential", self.credential, *self.other_secrets))
        self.server(api).fail(401, body=self.error_body(echo), times=1000)
        with self.engine(api) as tp:
            (result,) = tp.probe().values()
        assert not result.ok
        self.assert_no_secret(result.detail)

    # The catalog.

    def test_the_catalog_is_complete(self) -> None:
        cls = get(self.integration)
        assert self.integration in available()
        assert cls.name == self.integration
        assert cls.description
        names = [a.name for a in cls.actions]
        assert len(set(names)) == len(names), "an action is declared twice"
        for action in cls.actions:
            assert action.effect in _EFFECTS, action.name
            assert action.description, action.name
            assert action.requires, action.name
        assert self.action in names
        for key in cls.keys:
            assert key.description, key.name
        # An open catalog (AWS takes any IAM action) answers more names in ``action()``.
        routed = {r.action for r in cls.route_table().routes}
        undeclared = sorted(name for name in routed if cls.action(name) is None)
        assert not undeclared, f"routes name undeclared actions: {undeclared[:20]}"

    # Identity.

    @pytest.mark.parametrize("mode", _SHARED_MODES)
    def test_each_shared_identity_mode_maps_the_user(
        self, api: Any, mode: str, tmp_path: Path
    ) -> None:
        people = _identity(mode, self.user, self.system_user, self.template, tmp_path)
        with people as identity, self.engine(api, identity=identity) as tp:
            d = self.ask(tp, api)
        assert d.decision == "allow", d.reason

    def test_an_unmapped_user_is_unknown_and_the_system_is_not_asked(self, api: Any) -> None:
        identity = {"mode": "users", "users": {self.user: self.system_user}}
        server = self.server(api)
        with self.engine(api, identity=identity) as tp:
            before = len(server.requests)
            d = self.ask(tp, api, user="nobody@unmapped.example")
        assert d.decision == "unknown", d.reason
        assert len(server.requests) == before

    # The rule of the suite.

    def test_no_test_is_overridden(self) -> None:
        """A subclass may not replace the suite's tests, not even with one marked ``xfail``."""
        overridden = [
            name
            for name, base in inspect.getmembers(IntegrationConformance, inspect.isfunction)
            if name.startswith("test_") and getattr(type(self), name) is not base
        ]
        assert overridden == [], f"{type(self).__name__} overrides {', '.join(overridden)}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _identity:
    """The ``identity:`` settings of ``mode`` mapping ``user`` to ``system_user`` (and
    nobody else), with a directory service on 127.0.0.1 for ``http``."""

    def __init__(
        self, mode: str, user: str, system_user: str, template: str | None, tmp_path: Path
    ) -> None:
        self.mode, self.user, self.system_user = mode, user, system_user
        self.template, self.tmp_path = template, tmp_path
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> dict[str, Any]:
        domain = self.user.rpartition("@")[2]
        if self.mode == "users":
            return {"mode": "users", "users": {self.user: self.system_user}}
        if self.mode == "template":
            if self.template is None:
                pytest.skip("the system's ids cannot be written as a template")
            return {"mode": "template", "template": self.template, "domains": [domain]}
        if self.mode == "file":
            path = self.tmp_path / "people.json"
            path.write_text(json.dumps({self.user: self.system_user}))
            return {"mode": "file", "file": str(path)}
        if self.mode == "callable":
            known = {self.user: self.system_user}
            return {"mode": "callable", "resolve": known.get}
        self._server = _directory({self.user: self.system_user})
        return {"mode": "http", "url": f"http://127.0.0.1:{self._server.server_port}/who"}

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _directory(people: dict[str, str]) -> ThreadingHTTPServer:
    """An identity service answering ``GET /who?email=`` with ``{"user": id | null}``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            email = parse_qs(urlsplit(self.path).query).get("email", [""])[0]
            body = json.dumps({"user": people.get(email)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server
