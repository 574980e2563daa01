"""The authorization check: only an explicit allow passes; ``permission_check`` asks an engine
about the resource filled from the arguments, and refuses values that would change it."""

import re
import threading
from types import SimpleNamespace

import pytest
from toolpass import Decision, ToolCall, ToolRefused, permission_check

from .conftest import USER, RecordingEngine

ALLOW = [
    True,
    Decision.allow("granted"),
    SimpleNamespace(decision="allow"),
    SimpleNamespace(allowed=True),
]
DENY = [
    False,
    None,
    Decision.deny("no write access"),
    SimpleNamespace(decision="deny"),
    SimpleNamespace(allowed=False),
]
UNKNOWN = [
    Decision.unknown("the engine timed out"),
    SimpleNamespace(decision="unknown"),
    "allow",
    "yes",
    1,
    [True],
    object(),
    SimpleNamespace(decision="ALLOW"),
    SimpleNamespace(allowed="true"),
]


def described(value: object) -> str:
    """A parameter's id: its repr without a memory address (the same in every process)."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


@pytest.mark.parametrize("answer", ALLOW, ids=repr)
def test_an_explicit_allow_passes(drive, kit, session, events, answer):
    tool = drive.tool(kit, lambda: "done", authorize=lambda call: answer)
    assert drive.call(tool) == "done"
    [event] = events
    assert event.outcome == "ok"
    assert event.reasons[0].startswith("authorization: allow")


@pytest.mark.parametrize("answer", DENY, ids=repr)
def test_a_deny_is_not_authorized(drive, kit, session, events, answer):
    ran = []
    tool = drive.tool(kit, lambda: ran.append(1), name="merge", authorize=lambda call: answer)
    refusal = drive.refused(tool)
    assert refusal.code == "not_authorized"
    assert "may not call merge" in refusal.message
    assert "Do not retry" in refusal.message
    assert ran == []
    [event] = events
    assert event.code == "not_authorized"
    assert event.reasons[0].startswith("authorization: deny")


def test_the_reason_for_a_deny_reaches_the_model_and_the_audit(drive, kit, session, events):
    tool = drive.tool(kit, lambda: None, authorize=lambda c: Decision.deny("no write access"))
    assert "no write access" in drive.refused(tool).message
    assert events[0].reasons == ["authorization: deny (no write access)"]


@pytest.mark.parametrize("answer", UNKNOWN, ids=described)
def test_anything_else_is_an_authorization_error(drive, kit, session, answer):
    ran = []
    tool = drive.tool(kit, lambda: ran.append(1), authorize=lambda call: answer)
    refusal = drive.refused(tool)
    assert refusal.code == "authorization_error"
    assert "Try again later" in refusal.message
    assert ran == []


def test_an_authorizer_that_raises_fails_closed(drive, kit, session, events):
    def authorize(call: ToolCall) -> bool:
        raise TimeoutError("policy service did not answer")

    ran = []
    tool = drive.tool(kit, lambda: ran.append(1), authorize=authorize)
    refusal = drive.refused(tool)
    assert refusal.code == "check_error"
    assert "policy service" not in refusal.message  # the detail is for the audit only
    assert ran == []
    [event] = events
    assert "TimeoutError: policy service did not answer" in event.detail


def test_an_authorizer_may_refuse_with_its_own_code(drive, kit, session):
    def authorize(call: ToolCall) -> bool:
        raise ToolRefused("not_configured", "No connection named github is set up.")

    tool = drive.tool(kit, lambda: None, authorize=authorize)
    assert drive.refused(tool).code == "not_configured"


def test_the_authorizer_sees_the_call(drive, kit, session):
    seen: list[ToolCall] = []

    def authorize(call: ToolCall) -> bool:
        seen.append(call)
        return True

    tool = drive.tool(
        kit, lambda repo, title="bump": None, name="open_pr", effect="write", authorize=authorize
    )
    drive.call(tool, "acme/x")
    [call] = seen
    assert (call.user, call.name, call.effect) == (USER, "open_pr", "write")
    assert call.arguments == {"repo": "acme/x", "title": "bump"}


# permission_check, against an engine double that records what it was asked.


def test_permission_check_asks_the_engine_about_the_filled_resource(drive, kit, session, engine):
    engine.answers[(USER, "pr.create", "repo:acme/gitops-prod#main")] = Decision.allow()
    tool = drive.tool(
        kit,
        lambda repo, branch, title: f"opened {title}",
        authorize=permission_check(engine, "github", "pr.create", "repo:{repo}#{branch}"),
    )
    assert drive.call(tool, "acme/gitops-prod", "main", "bump") == "opened bump"
    how = "acheck" if drive.is_async else "check"
    assert engine.asked == [(USER, "github", "pr.create", "repo:acme/gitops-prod#main", False, how)]


def test_permission_check_passes_fresh(drive, kit, session, engine):
    engine.answers[(USER, "repo.delete", "repo:acme/x")] = Decision.allow()
    tool = drive.tool(
        kit,
        lambda repo: None,
        effect="destructive",
        authorize=permission_check(engine, "github", "repo.delete", "repo:{repo}", fresh=True),
    )
    drive.call(tool, "acme/x")
    assert engine.asked[0][4] is True


@pytest.mark.parametrize(
    ("decision", "code"),
    [
        (Decision.deny("not a maintainer"), "not_authorized"),
        (Decision.unknown("GitHub answered 502"), "authorization_error"),
    ],
)
def test_permission_check_refuses_what_the_engine_does_not_allow(
    drive, kit, session, engine, decision, code
):
    engine.answers[(USER, "pr.merge", "repo:acme/x")] = decision
    ran = []
    tool = drive.tool(
        kit,
        lambda repo: ran.append(repo),
        authorize=permission_check(engine, "github", "pr.merge", "repo:{repo}"),
    )
    refusal = drive.refused(tool, "acme/x")
    assert refusal.code == code
    # A deny's reason is the model's; a failed look-up's is the audit's only.
    assert decision.reason in (refusal.message if code == "not_authorized" else refusal.detail)
    assert ran == []


def test_permission_check_with_a_failing_engine_fails_closed(drive, kit, session, engine):
    engine.error = OSError("connection reset")
    tool = drive.tool(
        kit,
        lambda repo: None,
        authorize=permission_check(engine, "github", "pr.merge", "repo:{repo}"),
    )
    assert drive.refused(tool, "acme/x").code == "check_error"


async def test_an_engine_without_acheck_is_asked_off_the_loop(kit, session):
    class SyncOnly:
        def __init__(self) -> None:
            self.threads: list[int] = []

        def check(self, user, connection, action, resource, *, fresh=False):
            self.threads.append(threading.get_ident())
            return Decision.allow()

    engine = SyncOnly()

    async def body(repo: str) -> str:
        return repo

    tool = kit.secured_tool(body, authorize=permission_check(engine, "gh", "read", "repo:{repo}"))
    assert await tool("acme/x") == "acme/x"
    [thread] = engine.threads
    assert thread != threading.get_ident()


HOSTILE_ANYWHERE = [
    "acme/x?ref=main",
    "acme/x#frag",
    "evil@acme/x",
    "acme/x y",
    " acme/x",
    "acme/x\u00a0",
    "acme%2F..%2Fsecrets",  # percent-encoding: decoded later, it could climb
]
NEVER = [
    "acme/../secrets",
    "..",
    "acme/x\t",
    "acme/x\n",
    "acme/x\x00",
    "acme/\u202ex",
    "acme\\x",
    "acme/\uff0e\uff0e",
]


@pytest.mark.parametrize("value", HOSTILE_ANYWHERE + NEVER, ids=repr)
def test_values_that_change_the_resource_are_refused(drive, kit, session, engine, value):
    tool = drive.tool(
        kit,
        lambda repo: None,
        authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"),
    )
    refusal = drive.refused(tool, value)
    assert refusal.code == "out_of_scope"
    assert "'repo'" in refusal.message
    assert engine.asked == []


@pytest.mark.parametrize("vouch", ["validator", "scope"])
@pytest.mark.parametrize("value", HOSTILE_ANYWHERE, ids=repr)
def test_an_argument_with_its_own_rule_may_hold_them(drive, kit, session, engine, value, vouch):
    engine.answers[(USER, "mail.send", f"mailbox:{value}")] = Decision.allow()
    options = (
        {"validators": {"repo": lambda v: True}}
        if vouch == "validator"
        else {"scope": {"repo": lambda v: True}}
    )
    tool = drive.tool(
        kit,
        lambda repo: "sent",
        authorize=permission_check(engine, "mail", "mail.send", "mailbox:{repo}"),
        **options,
    )
    assert drive.call(tool, value) == "sent"
    assert engine.asked[0][3] == f"mailbox:{value}"


@pytest.mark.parametrize("value", NEVER, ids=repr)
def test_dots_and_control_characters_are_refused_even_when_vouched(
    drive, kit, session, engine, value
):
    tool = drive.tool(
        kit,
        lambda repo: None,
        validators={"repo": lambda v: True},
        authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"),
    )
    assert drive.refused(tool, value).code == "out_of_scope"
    assert engine.asked == []


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        (42, True),
        ("42", True),
        (True, False),
        (None, False),
        (["a"], False),
        (4.2, False),
        ("", False),
    ],
)
def test_resource_values_must_be_plain_names_or_numbers(drive, kit, session, value, allowed):
    engine = RecordingEngine()
    engine.answers[(USER, "issue.close", f"issue:{value}")] = Decision.allow()
    tool = drive.tool(
        kit,
        lambda number: "closed",
        authorize=permission_check(engine, "jira", "issue.close", "issue:{number}"),
    )
    if allowed:
        assert drive.call(tool, value) == "closed"
    else:
        expected = "invalid_arguments" if value is None else "out_of_scope"  # None: missing
        assert drive.refused(tool, value).code == expected
        assert engine.asked == []


def test_a_template_naming_a_missing_argument_fails_at_decoration(kit, engine):
    check = permission_check(engine, "github", "pr.create", "repo:{owner}/{repo}")
    with pytest.raises(TypeError, match="owner"):
        kit.secured_tool(lambda repo: None, authorize=check)


@pytest.mark.parametrize(
    "template", ["repo:{repo!r}", "repo:{repo:>10}", "repo:{0}", "repo:{repo.name}", "repo:{}"]
)
def test_a_template_takes_plain_fields_only(engine, template):
    with pytest.raises(ValueError, match="plain"):
        permission_check(engine, "github", "pr.create", template)


def test_a_missing_template_argument_is_invalid_not_out_of_scope(drive, kit, session, engine):
    tool = drive.tool(
        kit,
        lambda repo=None: "ran",
        authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"),
    )
    refused = drive.refused(tool)
    assert refused.code == "invalid_arguments"
    assert "'repo' is needed" in refused.message
    assert engine.asked == []
