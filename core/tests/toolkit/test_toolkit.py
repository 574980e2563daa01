"""Around the pipeline: on_refuse, independent toolkits, the global ``configure``, what the
decorated function looks like to a framework, and where hooks run for async tools."""

import asyncio
import contextvars
import inspect
import threading
import typing

import pytest
import toolpass
from toolpass import (
    CODES,
    ApprovalPending,
    ApprovalQueue,
    ApprovalRequest,
    Session,
    ToolCall,
    Toolkit,
    ToolRefused,
    current_session,
)

from .conftest import USER, attempt

# on_refuse


def test_on_refuse_str_makes_the_refusal_the_result(drive, make_kit, session, events):
    tool = drive.tool(make_kit(on_refuse=str), lambda: "ran", authorize=lambda call: False)
    result = drive.call(tool)
    assert isinstance(result, str)
    assert "may not" in result
    assert events[-1].code == "not_authorized"


def test_on_refuse_per_tool_overrides_the_toolkit(drive, make_kit, session):
    kit = make_kit(on_refuse=str)
    strict = drive.tool(kit, lambda: None, authorize=lambda c: False, on_refuse=None)
    custom = drive.tool(
        kit, lambda: None, authorize=lambda c: False, on_refuse=lambda exc: {"refused": exc.code}
    )
    assert drive.refused(strict).code == "not_authorized"
    assert drive.call(custom) == {"refused": "not_authorized"}


def test_on_refuse_covers_pending_approvals_and_leaves_body_errors_alone(drive, make_kit, session):
    kit = make_kit(on_refuse=str, approver=ApprovalQueue())
    wait = drive.tool(kit, lambda: None, approve=True)
    assert "approval" in drive.call(wait)

    def body() -> None:
        raise ValueError("boom")

    broken = drive.tool(kit, body)
    with pytest.raises(ValueError, match="boom"):
        drive.call(broken)


def test_refusal_codes_are_a_closed_set():
    assert {
        "no_session",
        "invalid_arguments",
        "out_of_scope",
        "limit_exceeded",
        "not_authorized",
        "authorization_error",
        "not_configured",
        "untrusted_input",
        "exfiltration",
        "approval_pending",
        "approval_denied",
        "credential_unavailable",
        "check_error",
    } <= set(CODES)
    with pytest.raises(ValueError, match="unknown refusal code"):
        ToolRefused("nope", "message")
    refusal = ToolRefused("out_of_scope", "Use a repository of acme.")
    assert str(refusal) == "Use a repository of acme."
    assert refusal.code == "out_of_scope"


# Toolkits


def test_toolkits_are_independent(session):
    first_events, second_events = [], []
    first = Toolkit(audit=first_events.append, limits={"write": 1}, approver=ApprovalQueue())
    second = Toolkit(audit=second_events.append)

    def body() -> str:
        return "ok"

    a = first.secured_tool(body, approve=True)
    b = second.secured_tool(body, approve=True)
    c = second.secured_tool(body)
    assert attempt(a)[1].code == "approval_pending"
    assert attempt(b)[1].code == "not_configured"  # no approver here
    assert [c() for _ in range(3)] == ["ok"] * 3  # no limit here
    assert [e.code for e in first_events] == ["approval_pending"]
    assert [e.code for e in second_events] == ["not_configured", None, None, None]


def test_toolkit_settings_are_read_at_call_time(drive, make_kit, session):
    kit = make_kit()
    tool = drive.tool(kit, lambda: "ok")
    assert drive.call(tool) == "ok"
    kit.configure(limits={"write": 1})
    assert drive.call(tool) == "ok"
    assert drive.refused(tool).code == "limit_exceeded"
    kit.configure(limits={})
    assert drive.call(tool) == "ok"


def test_configure_changes_only_what_it_names(make_kit):
    queue = ApprovalQueue()
    kit = make_kit(approver=queue, limits={"write": 2})
    kit.configure(on_refuse=str)
    assert kit.approver is queue
    assert kit.limits == {"write": 2}
    with pytest.raises(TypeError, match="approver"):
        kit.configure(approver="alice")


def test_the_global_configure_reaches_tools_declared_before_it(default_kit, session):
    events = []

    @toolpass.secured_tool(effect="destructive", approve=True, credential="bot")
    def drop(table: str, *, credential: str) -> str:
        return f"dropped {table} with {credential[:4]}"

    @toolpass.tool
    def look(table: str) -> str:
        return table

    with pytest.raises(ToolRefused) as info:
        drop("users")
    assert info.value.code == "not_configured"

    approvals = ApprovalQueue()
    toolpass.configure(
        approver=approvals,
        credentials={"bot": "tok_0123456789"},
        limits={"destructive": 1},
        audit=[events.append],
    )
    with pytest.raises(ToolRefused) as info:
        drop("users")
    approvals.approve(info.value.request_id, by="lead@example.com")
    assert drop("users") == "dropped users with tok_"
    assert look("users") == "users"
    assert [(e.tool, e.effect, e.outcome) for e in events] == [
        ("drop", "destructive", "refused"),
        ("drop", "destructive", "ok"),
        ("look", None, "ok"),
    ]


def test_secured_tool_takes_a_toolkit(make_kit, events, session):
    kit = make_kit()
    tool = toolpass.secured_tool(lambda: "ok", toolkit=kit)
    plain = toolpass.tool(lambda: "ok", toolkit=kit)
    tool()
    plain()
    assert [e.effect for e in events] == ["write", None]


@pytest.mark.parametrize("effect", ["", "two words", 3, "drop;"])
def test_an_effect_must_be_a_name(kit, effect):
    with pytest.raises(ValueError, match="effect"):
        kit.secured_tool(lambda: None, effect=effect)


# What frameworks see


def _schema(fn: typing.Any) -> dict[str, str]:
    """What a framework's ``@tool`` reads: the signature and the resolved type hints."""
    hints = typing.get_type_hints(fn)
    return {
        name: getattr(hints.get(name), "__name__", "?") for name in inspect.signature(fn).parameters
    }


def open_pr(repo: str, title: str, *, draft: bool = False, credential: str) -> str:
    """Open a pull request on ``repo``."""
    return f"{repo}:{title}:{draft}:{len(credential)}"


async def aopen_pr(repo: str, title: str, *, draft: bool = False, credential: str) -> str:
    """Open a pull request on ``repo``, asynchronously."""
    return f"{repo}:{title}:{draft}:{len(credential)}"


@pytest.mark.parametrize("fn", [open_pr, aopen_pr])
def test_the_decorated_function_keeps_its_name_docstring_and_signature(kit, fn):
    tool = kit.secured_tool(fn, credential="bot")
    assert tool.__name__ == fn.__name__
    assert tool.__doc__ == fn.__doc__
    assert tool.__module__ == fn.__module__
    assert inspect.iscoroutinefunction(tool) == inspect.iscoroutinefunction(fn)
    assert str(inspect.signature(tool)) == "(repo: str, title: str, *, draft: bool = False)" + (
        " -> str"
    )
    assert _schema(tool) == {"repo": "str", "title": "str", "draft": "bool"}


def test_name_renames_the_tool(kit, events, session):
    tool = kit.secured_tool(lambda: None, name="ping")
    assert tool.__name__ == "ping"
    tool()
    assert events[0].tool == "ping"


def test_as_tool_puts_a_framework_decorator_on_top(make_kit, events, session):
    class FrameworkTool:
        def __init__(self, fn: typing.Any) -> None:
            self.fn = fn
            self.name = fn.__name__
            self.description = fn.__doc__
            self.schema = _schema(fn)

        def invoke(self, **kwargs: typing.Any) -> typing.Any:
            return self.fn(**kwargs)

    kit = make_kit(credentials={"bot": "tok_0123456789"})
    tool = kit.secured_tool(
        open_pr, credential="bot", scope={"repo": "acme/*"}, as_tool=FrameworkTool, on_refuse=str
    )
    assert isinstance(tool, FrameworkTool)
    assert (tool.name, tool.description) == ("open_pr", open_pr.__doc__)
    assert tool.schema == {"repo": "str", "title": "str", "draft": "bool"}
    assert tool.invoke(repo="acme/app", title="bump") == "acme/app:bump:False:14"
    assert "outside" in tool.invoke(repo="evil/app", title="bump")  # every check is inside
    assert [e.code for e in events] == [None, "out_of_scope"]


def test_inside_a_framework_a_refusal_is_the_result_by_default(make_kit, events, session):
    """Frameworks mask or re-raise a tool's exception: the model must read the refusal."""
    wrapped = []
    kit = make_kit()
    tool = kit.secured_tool(lambda repo: repo, scope={"repo": "acme/*"}, as_tool=wrapped.append)
    assert tool is None  # the framework decorator's return
    refusal = wrapped[0]("evil/app")
    assert "outside what this tool may touch" in refusal
    raising = make_kit(on_refuse=None).secured_tool(
        lambda repo: repo, scope={"repo": "acme/*"}, as_tool=lambda f: f, on_refuse=None
    )
    with pytest.raises(ToolRefused):
        raising("evil/app")  # an explicit on_refuse=None keeps the exception


# Where hooks run for an async tool: sync ones in a worker thread with the caller's context,
# async ones on the event loop.

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


async def test_sync_hooks_of_an_async_tool_run_in_a_worker_thread_with_the_context(make_kit):
    seen: dict[str, tuple[int, str | None, str]] = {}

    def note(hook: str) -> None:
        session = current_session()
        seen[hook] = (threading.get_ident(), session and session.user, _request_id.get())

    def authorize(call: ToolCall) -> bool:
        note("authorize")
        return True

    def rule(call: ToolCall) -> str:
        note("approval-rule")
        return "always"

    def preview(call: ToolCall) -> str:
        note("preview")
        return "preview"

    def approver(request: ApprovalRequest) -> bool:
        note("approver")
        return True

    def credentials(name: str) -> str:
        note("credentials")
        return "tok_0123456789"

    async def body(x: int, *, credential: str) -> str:
        note("body")
        return "ok"

    kit = make_kit(approver=approver, credentials=credentials)
    tool = kit.secured_tool(
        body, authorize=authorize, approve=rule, preview=preview, credential="bot"
    )
    _request_id.set("req-42")
    async with Session(USER).active():
        assert await tool(1) == "ok"
    loop_thread = threading.get_ident()
    assert seen.pop("body")[0] == loop_thread
    assert set(seen) == {"authorize", "approval-rule", "preview", "approver", "credentials"}
    for hook, (thread, user, request_id) in seen.items():
        assert thread != loop_thread, hook
        assert (user, request_id) == (USER, "req-42"), hook


async def test_sync_listeners_of_an_async_tool_run_off_the_loop(make_kit):
    heard: list[tuple[int, str | None]] = []
    queue = ApprovalQueue()
    queue.on_request(
        lambda request: heard.append(
            (threading.get_ident(), current_session() and current_session().user)
        )
    )

    async def body() -> None:
        return None

    tool = make_kit(approver=queue).secured_tool(body, approve=True)
    async with Session(USER).active():
        with pytest.raises(ToolRefused):
            await tool()
    assert heard == [(heard[0][0], USER)]
    assert heard[0][0] != threading.get_ident()


async def test_async_hooks_run_on_the_loop(make_kit):
    loop = asyncio.get_running_loop()
    seen: dict[str, object] = {}

    async def note(hook: str) -> None:
        await asyncio.sleep(0)
        seen[hook] = (
            asyncio.get_running_loop() is loop,
            threading.get_ident(),
            current_session().user,
        )

    async def validator(value: int) -> bool:
        await note("validator")
        return True

    async def authorize(call: ToolCall) -> bool:
        await note("authorize")
        return True

    async def rule(call: ToolCall) -> str:
        await note("approval-rule")
        return "always"

    async def preview(call: ToolCall) -> str:
        await note("preview")
        return "preview"

    async def approver(request: ApprovalRequest) -> bool:
        await note("approver")
        return True

    async def credentials(name: str) -> str:
        await note("credentials")
        return "tok_0123456789"

    async def body(x: int, *, credential: str) -> str:
        return credential[:4]

    kit = make_kit(approver=approver, credentials=credentials)
    tool = kit.secured_tool(
        body,
        validators={"x": validator},
        authorize=authorize,
        approve=rule,
        preview=preview,
        credential="bot",
    )
    async with Session(USER).active():
        assert await tool(1) == "tok_"
    assert set(seen) == {
        "validator",
        "authorize",
        "approval-rule",
        "preview",
        "approver",
        "credentials",
    }
    assert all(v == (True, threading.get_ident(), USER) for v in seen.values()), seen


async def _async_yes(*args: object) -> bool:
    return True


@pytest.mark.parametrize(
    ("hook", "code"),
    [
        ("authorize", "check_error"),
        ("approve", "check_error"),
        ("preview", "check_error"),
        ("approver", "check_error"),
        ("credentials", "check_error"),
    ],
)
def test_an_async_hook_on_a_sync_tool_is_refused_clearly(make_kit, session, events, hook, code):
    settings = {"approver": ApprovalQueue(), "credentials": {"bot": "tok_0123456789"}}
    options: dict[str, object] = {"credential": "bot"}
    if hook in ("approver", "credentials"):
        settings[hook] = _async_yes
        options["approve"] = hook == "approver"
    else:
        options[hook] = _async_yes
        if hook == "preview":
            options["approve"] = True
    ran = []
    tool = make_kit(**settings).secured_tool(lambda *, credential: ran.append(1), **options)
    with pytest.raises(ToolRefused) as info:
        tool()
    assert info.value.code == code
    assert ran == []
    assert "is async" in events[-1].detail


def test_hooks_take_the_call_or_the_arguments_by_name(make_kit, session):
    """An authorizer or approval rule may take the call (``call["amount"]`` or
    ``call.arguments``), or just the arguments it names."""
    queue = ApprovalQueue()
    kit = make_kit(approver=queue)
    asked = []

    def authorize(to: str) -> bool:
        asked.append(to)
        return to != "mallory"

    @kit.secured_tool(authorize=authorize, approve=lambda amount: amount > 1000 and "big")
    def pay(to: str, amount: int) -> str:
        return f"paid {to} {amount}"

    @kit.secured_tool(authorize=lambda call: call["amount"] < 100, approve=lambda **kw: False)
    def tip(to: str, amount: int) -> str:
        return "tipped"

    assert pay("bob", 5) == "paid bob 5"
    with pytest.raises(ToolRefused) as info:
        pay("mallory", 5)
    assert info.value.code == "not_authorized"
    with pytest.raises(ApprovalPending) as pending:
        pay("bob", 5000)
    assert pending.value.request.reasons == ("big",)
    assert pending.value.approval_id == pending.value.request.id
    assert tip("bob", 5) == "tipped"
    with pytest.raises(ToolRefused):
        tip("bob", 500)
    assert asked == ["bob", "mallory", "bob"]


def test_limits_name_effects_or_tools(make_kit, session):
    with pytest.raises(ValueError, match="say 'tool:pong' for a tool"):
        make_kit(limits={"pong": 1})  # neither an effect nor said to be a tool: a typo?
    kit = make_kit(
        limits={"effect:write": 5, "tool:ping": 1, "destructive": 1}, tool_limits={"pong": 1}
    )
    ping = kit.secured_tool(lambda: "ping", name="ping")
    pong = kit.secured_tool(lambda: "pong", name="pong")
    assert (ping(), pong()) == ("ping", "pong")
    for tool in (ping, pong):
        with pytest.raises(ToolRefused) as info:
            tool()
        assert info.value.code == "limit_exceeded"
    assert kit.limits == {"write": 5, "destructive": 1}
    assert kit.tool_limits == {"pong": 1, "ping": 1}
