"""The readable audit line, built straight from the event: the same line as formatting the
full record, and written through before the call returns."""

from __future__ import annotations

import datetime
import io
import subprocess
import sys
import textwrap

from hypothesis import given
from hypothesis import strategies as st
from toolpass import AuditEvent, StderrSink
from toolpass.outcome.audit_text import compose, iso, line, plain, short

SECRET = "hunter2-very-secret"
texts = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from([SECRET, f"token {SECRET} in it", "ghp_" + "a1B2" * 9, "a\nb\x1b[31m"]),
)


@st.composite
def events(draw: st.DrawFn) -> AuditEvent:
    event = AuditEvent(draw(st.text(max_size=20)), draw(st.sampled_from([None, "write"])))
    event.user = draw(texts)
    event.outcome = draw(st.sampled_from(["ok", "refused", "error", "cancelled", ""]))
    event.code = draw(texts)
    event.message, event.detail = draw(texts), draw(texts)
    if draw(st.booleans()):
        event.authorization = (draw(st.sampled_from(["allow", "deny"])), draw(st.text()))
    event.approval_reasons = tuple(draw(st.lists(st.text(max_size=20), max_size=2)))
    event.secrets = draw(st.sampled_from([(), (SECRET,)]))
    event.time = draw(st.floats(0, 4e9))
    event.duration = draw(st.floats(0, 100))
    return event


@given(events())
def test_the_stderr_line_is_the_line_of_the_full_record(event: AuditEvent) -> None:
    stream = io.StringIO()
    StderrSink(stream=stream)(event)
    assert stream.getvalue() == line(event.to_dict()) + "\n"


@given(st.floats(0, 2**34))
def test_times_read_as_datetime_writes_them(timestamp: float) -> None:
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    expected = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert iso(timestamp) == expected


spaced = st.text(alphabet=st.sampled_from("ab \t\n\u00a0\u2028\x1b\u3000é"), max_size=200)


@given(spaced)
def test_a_short_reason_is_one_line_of_single_spaces(text: str) -> None:
    collapsed = " ".join(plain(text).split())
    assert short(text) == (collapsed if len(collapsed) <= 160 else collapsed[:157] + "...")


@given(spaced, spaced, spaced, st.one_of(st.none(), spaced), st.one_of(st.none(), st.floats(0, 9)))
def test_every_part_of_a_line_is_shown_on_one_line(
    user: str, tool: str, outcome: str, code: str | None, took: float | None
) -> None:
    shown = plain(outcome or "?") + (f" {plain(code)}" if code else "")
    took_shown = f" ({took:g} ms)" if took is not None else ""
    expected = f"T toolpass: {plain(user or '-')} {plain(tool)} {shown}{took_shown}: why"
    assert compose("T", user, tool, outcome, code, took, "why") == expected


def test_a_line_survives_the_process_being_killed_right_after_the_call() -> None:
    program = textwrap.dedent("""\
        import os, signal
        from toolpass import Session, Toolkit

        kit = Toolkit()

        @kit.secured_tool(effect="read")
        def read_issue(repo: str) -> str:
            return "fine"

        with Session("dana@example.com").active():
            read_issue("acme/app")
        os.kill(os.getpid(), signal.SIGKILL)
        """)
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -9
    assert "toolpass: dana@example.com read_issue ok" in done.stderr
