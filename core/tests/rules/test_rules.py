"""Ready-made validators and secret scanning, alone and in the pipeline."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.rules import find_secret
from toolpass.rules.validators import at_least, at_most, matches, max_length, one_of, path_under

SECRETS = {
    "ghp_" + "A1b2" * 9: "a GitHub token",
    "github_pat_" + "x1" * 30: "a GitHub token",
    "glpat-" + "a" * 20: "a GitLab token",
    "xoxb-1234567890-abcdefghij": "a Slack token",
    "AKIAIOSFODNN7EXAMPLE": "an AWS access key",
    "AIza" + "B" * 35: "a Google API key",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc": "a Stripe secret key",
    "sk-ant-" + "q" * 40: "an OpenAI or Anthropic API key",
    "-----BEGIN OPENSSH PRIVATE KEY-----": "a private key",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N": "a JSON Web Token",
}


@pytest.mark.parametrize(("secret", "kind"), SECRETS.items())
def test_known_credentials_are_found_in_text(secret: str, kind: str) -> None:
    assert find_secret(f"please forward this: {secret} thanks") == kind


@pytest.mark.parametrize(
    "text",
    [
        "hello world",
        "the task-force skills",
        "ghp_short",
        "AKIA lowercase akia1234567890abcdef",
        "sk-learn is a library",
        "eyJ alone",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_prose_without_token_prefixes_never_matches(text: str) -> None:
    for prefix in (
        "gh",
        "github_pat",
        "glpat",
        "xox",
        "AKIA",
        "ASIA",
        "AIza",
        "sk",
        "rk",
        "eyJ",
        "-----BEGIN",
    ):
        if prefix in text:
            return
    assert find_secret(text) is None


def test_a_tool_that_sends_out_a_credential_needs_approval_or_is_refused() -> None:
    queue = ApprovalQueue()
    sent: list[str] = []

    def send(to: str, body: str) -> str:
        sent.append(body)
        return "sent"

    approving = Toolkit(approver=queue, audit=[]).secured_tool(send, sends_out=True)
    refusing = Toolkit(audit=[], exfiltration="refuse").secured_tool(send, sends_out=True)
    quiet = Toolkit(audit=[]).secured_tool(send, name="note")  # sends nothing out
    token = "ghp_" + "Z9" * 18
    with Session("dana@example.com").active():
        with pytest.raises(ApprovalPending) as pending:
            approving("x@example.com", f"here is the key {token}")
        assert pending.value.request.reasons == (
            "its arguments carry what looks like a GitHub token",
        )
        with pytest.raises(ToolRefused) as info:
            refusing("x@example.com", f"ssh: {token}")
        assert info.value.code == "exfiltration"
        assert token not in info.value.message
        assert approving("x@example.com", "no secrets here") == "sent"
        assert quiet("x@example.com", token) == "sent"
    assert sent == ["no secrets here", token]


def test_validators_accept_or_say_why() -> None:
    cases = [
        (at_most(10), [3, 10, 2.5], [11, "3", True]),
        (at_least(1), [1, 7], [0, -1, None]),
        (one_of("low", "high", 3), ["low", 3], ["mid", 3.0, True]),
        (max_length(3), ["abc", [1, 2]], ["abcd", 5]),
        (matches(r"[A-Z]+-\d+"), ["PAY-12"], ["pay-12", "PAY-12\n", 12]),
        (
            path_under("/srv/data"),
            ["a/b.txt", "/srv/data/x"],
            ["/etc/passwd", "../x", "a/../../x", "/srv/database", "a\\b", "", 3],
        ),
    ]
    for validator, good, bad in cases:
        for value in good:
            assert validator(value) is True
        for value in bad:
            with pytest.raises(ValueError, match="must"):
                validator(value)


def test_validators_in_the_pipeline_tell_the_model_why() -> None:
    kit = Toolkit(audit=[])

    @kit.secured_tool(validators={"amount": at_most(1000), "path": path_under("/srv")})
    def pay(amount: int, path: str) -> str:
        return "paid"

    with Session("dana@example.com").active():
        assert pay(10, "invoices/1.pdf") == "paid"
        with pytest.raises(ToolRefused) as info:
            pay(5000, "invoices/1.pdf")
    assert info.value.code == "invalid_arguments"
    assert "must be at most 1000" in info.value.message
