"""OpenTelemetry export: a span per tool call with the decision as attributes, an event per
request the hook checked, read back through the SDK's in-memory exporter. The requests go
to a fake GitHub on 127.0.0.1 through the real request hook."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from fakes.github import FakeGitHub
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from toolpass import OtelSink, Session, Toolkit, Toolpass, ToolRefused, intercept

TOKEN = "ghp_otel0000000000000000000000000000000000"
USERS = {"dana@example.com": "dana", "rory@example.com": "rory"}
PR = {"title": "fix", "head": "fix", "base": "main"}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write", "rory": "read"})
        gh.add_token(TOKEN)
        yield gh


@pytest.fixture
def engine(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolpass]:
    monkeypatch.setenv("TOOLPASS_OTEL_GITHUB_TOKEN", TOKEN)
    conn = {
        "id": "github",
        "integration": "github",
        "url": github.api_url,
        "token": "env:TOOLPASS_OTEL_GITHUB_TOKEN",
        "identity": {
            "mode": "users",
            "users": {"dana@example.com": "dana", "rory@example.com": "rory"},
        },
    }
    with Toolpass([conn]) as tp:
        yield tp


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_a_span_per_call_with_the_decision_and_an_event_per_request(
    engine: Toolpass, github: FakeGitHub, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    tracer = provider.get_tracer("agent")
    kit = Toolkit(permissions=engine, audit=[OtelSink(provider.get_tracer("toolpass"))])

    @kit.secured_tool(effect="write")
    def open_pr(repo: str, password: str = "") -> int:
        url = f"{github.api_url}/repos/{repo}/pulls"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        return requests.post(url, json=PR, headers=headers, timeout=5).status_code

    @kit.secured_tool(effect="read", authorize=lambda call: False)
    def secret_report() -> str:
        return "never"

    with tracer.start_as_current_span("agent turn") as turn:
        with Session("dana@example.com").active():
            assert open_pr("acme/widgets", password="hunter2") == 201
        with Session("rory@example.com").active():
            with pytest.raises(ToolRefused):
                open_pr("acme/widgets")
            with pytest.raises(ToolRefused):
                secret_report()
    intercept.uninstall()

    done = [s for s in exporter.get_finished_spans() if s.name != "agent turn"]
    assert [s.name for s in done] == ["execute_tool open_pr"] * 2 + ["execute_tool secret_report"]
    for span in done:
        assert span.parent is not None
        assert span.parent.span_id == turn.get_span_context().span_id
        assert span.start_time <= span.end_time
    allowed, refused, denied = done

    assert dict(allowed.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "open_pr",
        "toolpass.tool": "open_pr",
        "toolpass.effect": "write",
        "toolpass.outcome": "ok",
        "toolpass.user": "dana@example.com",
        "toolpass.session": allowed.attributes["toolpass.session"],  # type: ignore[index]
        "toolpass.connection": "github",
        "toolpass.action": "pr.create",
        "toolpass.resource": "repo:acme/widgets",
    }
    assert allowed.status.status_code is StatusCode.UNSET
    (request,) = allowed.events
    assert request.name == "toolpass.request"
    shown = dict(request.attributes or {})
    assert {k: shown.get(k) for k in ("method", "path", "connection", "action", "resource")} == {
        "method": "POST",
        "path": "/repos/acme/widgets/pulls",
        "connection": "github",
        "action": "pr.create",
        "resource": "repo:acme/widgets",
    }
    assert shown["verdict"] == "allowed"
    assert all(not k.startswith("_") for k in shown)

    attributes = refused.attributes or {}
    assert attributes["toolpass.outcome"] == "refused"
    assert attributes["toolpass.code"] == "not_authorized"
    assert attributes["toolpass.user"] == "rory@example.com"
    assert attributes["toolpass.action"] == "pr.create"
    assert "toolpass.reason" in attributes
    assert refused.status.status_code is StatusCode.ERROR
    assert refused.status.description == "not_authorized"
    assert refused.events[0].attributes["verdict"] != "allowed"  # type: ignore[index]

    attributes = denied.attributes or {}
    assert attributes["toolpass.code"] == "not_authorized"
    assert attributes["toolpass.reason"] == "authorization: deny"
    assert "toolpass.connection" not in attributes
    assert denied.events == ()
    assert "hunter2" not in repr([dict(s.attributes or {}) for s in done])


def test_core_imports_without_opentelemetry_and_the_sink_says_what_to_install() -> None:
    program = textwrap.dedent("""\
        import sys

        class Blocked:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("no opentelemetry here")
                return None

        sys.meta_path.insert(0, Blocked())
        import toolpass
        from toolpass import Session, Toolkit
        kit = Toolkit(audit=[lambda e: None])
        with Session("dana").active():
            assert kit.secured_tool(lambda: "ran", effect="read")() == "ran"
        try:
            toolpass.OtelSink()
        except ImportError as e:
            print(e)
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """)
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == [
        "OtelSink needs OpenTelemetry: pip install 'toolpass-core[otel]'",
        "[]",
    ]


def test_a_failing_tracer_never_changes_the_call(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    class Broken:
        def start_span(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("collector down")

    kit = Toolkit(audit=[OtelSink(Broken())])
    with Session("dana@example.com").active():
        assert kit.secured_tool(lambda: "ran", effect="read")() == "ran"
