"""Audit events are written as calls end, and their ``time`` says when each ended, so a
file of them is in time order: a call a tool makes is written (and timed) before the tool."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import JsonlSink, Session, Toolkit
from toolpass.outcome.audit_read import timestamp


def nested(kit: Toolkit, depth: int):  # type: ignore[no-untyped-def]
    """A tool calling a tool calling ... ``depth`` deep, each pausing a little."""

    def innermost() -> str:
        time.sleep(0.002)
        return "done"

    tool = kit.secured_tool(innermost, name="level0", effect="read")
    for level in range(1, depth + 1):

        def outer(inner=tool) -> str:  # type: ignore[no-untyped-def]
            time.sleep(0.002)
            return inner()

        tool = kit.secured_tool(outer, name=f"level{level}", effect="read")
    return tool


@given(depth=st.integers(1, 4), calls=st.integers(1, 3))
@settings(max_examples=10)
def test_a_file_of_nested_calls_is_in_time_order(depth: int, calls: int, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    kit = Toolkit(audit=[JsonlSink(log)])
    tool = nested(kit, depth)
    with Session("dana@example.com").active():
        for _ in range(calls):
            assert tool() == "done"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["tool"] for e in events] == [f"level{n}" for n in range(depth + 1)] * calls
    times = [timestamp(e["time"]) for e in events]
    assert times == sorted(times)
    outer, inner = events[depth], events[depth - 1]
    assert outer["duration_ms"] > inner["duration_ms"]  # the caller took longer, ended later


def test_an_otel_sink_with_no_tracer_provider_says_so_once(tmp_path: Path) -> None:
    script = textwrap.dedent("""\
        from toolpass import OtelSink, Session, Toolkit

        kit = Toolkit(audit=[OtelSink()])
        tool = kit.secured_tool(lambda: "ok", name="ping", effect="read")
        with Session("dana@example.com").active():
            tool()
            tool()
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("OtelSink: no OpenTelemetry tracer provider is set") == 1


def test_an_otel_sink_with_a_provider_set_says_nothing(tmp_path: Path) -> None:
    script = textwrap.dedent("""\
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from toolpass import OtelSink, Session, Toolkit

        kit = Toolkit(audit=[OtelSink()])  # made before the provider is set: still fine
        trace.set_tracer_provider(TracerProvider())
        tool = kit.secured_tool(lambda: "ok", name="ping", effect="read")
        with Session("dana@example.com").active():
            tool()
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
