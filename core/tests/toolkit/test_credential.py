"""Step 8, credential: fetched only after every check (mapping or callable), injected as the
keyword-only ``credential`` parameter."""

import pytest
from toolpass import ApprovalQueue, ToolCall

TOKEN = "ghp_0123456789abcdefghij"


def _open_pr(repo: str, *, credential: str) -> str:
    return f"{repo} with {credential[:4]}"


class SecretRef:
    """A secret reference: something with ``get()``, like an engine's secret handle."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.reads = 0

    def get(self) -> str:
        self.reads += 1
        return self.value


@pytest.mark.parametrize("source", ["mapping", "mapping-callable", "mapping-reference", "callable"])
def test_the_credential_is_injected(drive, make_kit, session, source):
    asked: list[str] = []
    ref = SecretRef(TOKEN)

    def fetch(name: str) -> str:
        asked.append(name)
        return TOKEN

    credentials = {
        "mapping": {"github-bot": TOKEN},
        "mapping-callable": {"github-bot": lambda: fetch("github-bot")},
        "mapping-reference": {"github-bot": ref},
        "callable": fetch,
    }[source]
    tool = drive.tool(make_kit(credentials=credentials), _open_pr, credential="github-bot")
    assert drive.call(tool, "acme/app") == "acme/app with ghp_"
    assert drive.call(tool, "acme/app") == "acme/app with ghp_"
    if source in ("mapping-callable", "callable"):
        assert asked == ["github-bot", "github-bot"]  # fetched for each call, not cached
    if source == "mapping-reference":
        assert ref.reads == 2


@pytest.mark.parametrize("credentials", [None, {}, {"other": TOKEN}])
def test_a_missing_credential_is_not_configured(drive, make_kit, session, events, credentials):
    ran = []
    tool = drive.tool(
        make_kit(credentials=credentials),
        lambda repo, *, credential: ran.append(repo),
        credential="github-bot",
    )
    refusal = drive.refused(tool, "acme/app")
    assert refusal.code == "not_configured"
    assert "operator" in refusal.message
    assert ran == []
    assert "github-bot" in events[-1].detail


def _sealed_vault(name: str) -> str:
    raise ConnectionError("vault sealed")


@pytest.mark.parametrize(
    "fetch",
    [
        _sealed_vault,
        lambda name: None,
        lambda name: "",
        lambda name: b"bytes-token-value",
        lambda name: 12345678,
    ],
    ids=["raises", "none", "empty", "bytes", "number"],
)
def test_a_credential_that_cannot_be_had_is_unavailable(drive, make_kit, session, fetch):
    ran = []
    tool = drive.tool(
        make_kit(credentials=fetch),
        lambda repo, *, credential: ran.append(repo),
        credential="github-bot",
    )
    refusal = drive.refused(tool, "acme/app")
    assert refusal.code == "credential_unavailable"
    assert "Try again" in refusal.message
    assert ran == []


def test_credentials_must_be_a_mapping_or_a_callable(make_kit):
    with pytest.raises(TypeError, match="credentials"):
        make_kit(credentials="ghp_token")


def test_the_credential_is_fetched_after_every_check_and_approval(drive, make_kit, session):
    log: list[str] = []

    def authorize(call: ToolCall) -> bool:
        log.append("authorize")
        return True

    def approver(request: object) -> bool:
        log.append("approve")
        return True

    def fetch(name: str) -> str:
        log.append("credential")
        return TOKEN

    def body(repo: str, *, credential: str) -> str:
        log.append("body")
        return "ok"

    kit = make_kit(approver=approver, credentials=fetch)
    tool = drive.tool(
        kit,
        body,
        authorize=authorize,
        approve=True,
        credential="bot",
        validators={"repo": lambda v: log.append("validate") or True},
    )
    drive.call(tool, "acme/app")
    assert log == ["validate", "authorize", "approve", "credential", "body"]


@pytest.mark.parametrize(
    ("options", "args", "code"),
    [
        ({"approve": True}, ("acme/app",), "approval_pending"),
        ({"authorize": lambda call: False}, ("acme/app",), "not_authorized"),
        ({"scope": {"repo": "acme/*"}}, ("other/app",), "out_of_scope"),
        ({"limit": 0}, ("acme/app",), "limit_exceeded"),
        ({}, (1,), "invalid_arguments"),
    ],
    ids=["pending", "denied", "scope", "limit", "types"],
)
def test_a_refused_call_never_fetches_the_credential(drive, make_kit, session, options, args, code):
    fetched: list[str] = []
    kit = make_kit(approver=ApprovalQueue(), credentials=lambda name: fetched.append(name) or TOKEN)
    tool = drive.tool(kit, _open_pr, credential="github-bot", **options)
    assert drive.refused(tool, *args).code == code
    assert fetched == []


def test_hooks_and_audit_never_see_the_credential(drive, make_kit, session, events):
    seen: list[dict[str, object]] = []
    kit = make_kit(credentials={"bot": TOKEN})
    tool = drive.tool(
        kit,
        _open_pr,
        credential="bot",
        authorize=lambda call: seen.append(dict(call.arguments)) or True,
    )
    drive.call(tool, "acme/app")
    assert seen == [{"repo": "acme/app"}]
    assert TOKEN not in repr(events[-1].to_dict())
