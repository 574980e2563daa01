"""Secret scanning: credentials by their documented shape, wherever they stand (glued to other
text, split across arguments, broken up by invisible characters), and never ordinary text."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.rules import find_secret, find_secret_in
from toolpass.rules.secrets import scrub, secret_name

PROPERTY = settings(deadline=None, database=None, max_examples=300)

SECRETS = {
    "ghp_" + "A1b2" * 9: "a GitHub token",
    "gho_" + "zY9x" * 9: "a GitHub token",
    "github_pat_" + "11AB2cd3E_" * 6: "a GitHub token",
    "glpat-" + "a" * 20: "a GitLab token",
    "xoxb-1234567890-abcdefghij": "a Slack token",
    "xoxp-1234-5678-90ab-" + "cdef0123" * 4: "a Slack token",
    "AKIAIOSFODNN7EXAMPLE": "an AWS access key",
    "ASIAY34FZKBOKMUTVV7A": "an AWS access key",
    "AIza" + "B" * 35: "a Google API key",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc": "a Stripe secret key",
    "rk_live_" + "51HqLyjWDarjtT1zdp7dcXy": "a Stripe secret key",
    "sk-ant-api03-" + "Xq9z" * 10: "an OpenAI or Anthropic API key",
    "sk-proj-" + "Ab3_De6-" * 5: "an OpenAI or Anthropic API key",
    "sk-" + "T3BlbkFJ" * 6: "an OpenAI or Anthropic API key",
    "-----BEGIN OPENSSH PRIVATE KEY-----": "a private key",
    "-----BEGIN PRIVATE KEY-----": "a private key",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N": "a JSON Web Token",
}
secrets = st.sampled_from(sorted(SECRETS.items()))


@pytest.mark.parametrize(("secret", "kind"), SECRETS.items())
def test_known_credentials_are_found_in_text(secret: str, kind: str) -> None:
    assert find_secret(f"please forward this: {secret} thanks") == kind


@pytest.mark.parametrize(
    "text",
    [
        "xghp_" + "A1b2" * 9,
        "key_AKIAIOSFODNN7EXAMPLE",
        "token=ghp_" + "A1b2" * 9,
        '"AKIAIOSFODNN7EXAMPLE"',
        "AKIAIOSFODNN7EXAMPLEMORELETTERS",
        "ghp_" + "A1b2" * 9 + "trailing",
        "Bearer:sk-ant-api03-" + "Xq9z" * 10,
        "risk-proj-" + "Ab3_De6-" * 5,
        "url?k=AIza" + "B" * 35 + "&x=1",
    ],
)
def test_credentials_glued_to_other_text_are_found(text: str) -> None:
    assert find_secret(text) is not None


GLUE = st.text(alphabet="abcXYZ019_=:\"'/.,;()[]{}<>?&# \n", max_size=12)


@PROPERTY
@given(secret=secrets, before=GLUE, after=GLUE)
def test_a_credential_is_found_whatever_text_surrounds_it(secret, before, after):
    token, kind = secret
    assert find_secret(before + token + after) == kind


@pytest.mark.parametrize(
    "text",
    [
        "hello world",
        "the task-force skills",
        "ghp_short",
        "AKIA lowercase akia1234567890abcdef",
        "sk-learn is a library",
        "eyJ alone",
        "xoxo-hugs-and-kisses-from-all-of-us",  # a word, not a Slack token
        "risk-assessment-framework-for-the-whole-enterprise",
        "disk-2F1C3B9A-1D2E-4F5A-8B9C-0D1E2F3A4B5C",  # an upper-case UUID
        "highs_3f2a9c0d1e2b4a5f6c7d8e9f0a1b2c3d4e5f6a7b",  # a hex digest
        "desk_live_abcdefghijklmnopqrstuvwxyz",
        "ASIA PACIFIC REGIONAL OFFICE",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


ENGLISH = (
    "the of and to in is you that it was for on are as with they at be this have from or "
    "one had by word but not what all were we when your can said there use each which she "
    "how their if will up other about out many then them these so some her would make like "
    "ask task risk desk disk mask whisk high highs laughs weighs xoxo asia akia live github "
    "pat proj ant key token secret begin private assessment framework enterprise skills"
)
WORDS = ENGLISH.split()  # and words that end like a credential's prefix begins


def cased(text: st.SearchStrategy[str], *cases: object) -> st.SearchStrategy[str]:
    return st.builds(lambda t, case: case(t), text, st.sampled_from(cases))


word = cased(st.sampled_from(WORDS), str.lower, str.capitalize, str.upper)
phrase = st.builds(
    lambda ws, sep: sep.join(ws),
    st.lists(word, min_size=1, max_size=4),
    st.sampled_from(["-", "_"]),
)
uuid = cased(st.uuids().map(str), str.lower, str.upper)
sha = cased(st.binary(min_size=20, max_size=32).map(bytes.hex), str.lower, str.upper)
SEPARATORS = [" ", ", ", ". ", "\n", " - ", " / ", ": ", '"', " = ", " (", ") "]
items = st.one_of(word, phrase, uuid, sha, st.integers(0, 10**6).map(str))
prose = st.lists(st.tuples(items, st.sampled_from(SEPARATORS)), max_size=30).map(
    lambda parts: "".join(item + sep for item, sep in parts)
)


@PROPERTY
@given(text=prose)
def test_words_uuids_and_hex_digests_never_match(text):
    assert find_secret(text) is None


# Split, broken up, disguised: find_secret_in.


@PROPERTY
@given(
    secret=secrets,
    cut=st.floats(0.05, 0.95),
    decoys=st.lists(st.sampled_from(["hello", "dana@example.com", "42", "note"]), max_size=5),
    data=st.data(),
)
def test_a_credential_split_across_two_texts_is_found_in_any_order(secret, cut, decoys, data):
    token, kind = secret
    at = max(1, min(len(token) - 1, int(len(token) * cut)))
    pieces = list(decoys)
    for half in (token[:at], token[at:]):
        pieces.insert(data.draw(st.integers(0, len(pieces))), half)
    assert find_secret_in(pieces) == kind


@pytest.mark.parametrize("reverse", [False, True])
def test_with_many_texts_neighbours_are_joined_both_ways(reverse: bool) -> None:
    token = "ghp_" + "A1b2" * 9
    halves = [token[:20], token[20:]]
    if reverse:
        halves.reverse()
    pieces = [f"item {i}" for i in range(12)]
    pieces[5:5] = halves
    assert find_secret_in(pieces) == "a GitHub token"


HIDDEN = (
    " \t\n\r\x0b\x0c\x00\x1b\x7f\x85\xa0\u1680\u2002\u2028\u2029\u3000"
    "\u00ad\u034f\u061c\u115f\u180e\u200b\u200c\u200d\u200e\u202e\u2060\u2066\u3164"
    "\ufe0f\ufeff\uffa0\U000e0041\U000e0100"
)


@PROPERTY
@given(secret=secrets, data=st.data())
def test_whitespace_and_invisible_characters_inside_a_credential_do_not_hide_it(secret, data):
    token, kind = secret
    chars = list(token)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(chars)))
        chars.insert(at, data.draw(st.text(alphabet=HIDDEN, min_size=1, max_size=3)))
    assert find_secret_in([f"see: {''.join(chars)}"]) == kind


@pytest.mark.parametrize(("secret", "kind"), SECRETS.items())
def test_fullwidth_and_other_compatibility_forms_do_not_hide_a_credential(
    secret: str, kind: str
) -> None:
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in secret)
    assert find_secret_in([fullwidth]) == kind
    bold = "".join(_math_bold(c) for c in secret)
    assert find_secret_in([bold]) == kind


def _math_bold(c: str) -> str:
    if "A" <= c <= "Z":
        return chr(0x1D400 + ord(c) - ord("A"))
    if "a" <= c <= "z":
        return chr(0x1D41A + ord(c) - ord("a"))
    return c


def test_every_format_and_control_character_is_removed() -> None:
    hidden = [
        chr(i)
        for i in range(sys.maxunicode + 1)
        if unicodedata.category(chr(i)) in ("Cf", "Cc") or chr(i).isspace()
    ]
    missed = [
        f"U+{ord(c):04X}" for c in hidden if find_secret_in([f"AKIA{c}IOSFODNN7EXAMPLE"]) is None
    ]
    assert missed == []


lowercase_prose = st.builds(
    lambda ws, sep: sep.join(ws),
    st.lists(cased(st.sampled_from(WORDS), str.lower, str.capitalize), max_size=30),
    st.sampled_from([" ", " - ", ", ", "\n"]),
)


@PROPERTY
@given(texts=st.lists(lowercase_prose, max_size=10))
def test_prose_split_over_arguments_never_matches(texts):
    assert find_secret_in(texts) is None


@PROPERTY
@given(texts=st.lists(st.one_of(uuid, sha), max_size=10))
def test_uuids_and_digests_in_arguments_never_match(texts):
    assert find_secret_in(texts) is None


def test_nothing_is_found_in_no_texts() -> None:
    assert find_secret_in([]) is None
    assert find_secret_in(["", ""]) is None


# Names and scrubbing, for audit records.


def test_secret_names_and_scrubbing() -> None:
    assert secret_name("API_Token")
    assert secret_name("authorization")
    assert not secret_name("repo")
    token = "ghp_" + "A1b2" * 9
    record = {"body": [f"key={token};", 3], "note": "fine"}
    assert scrub(record) == {"body": ["key=[REDACTED];", 3], "note": "fine"}


# In the pipeline.


def test_a_tool_that_sends_out_a_credential_needs_approval_or_is_refused() -> None:
    queue = ApprovalQueue()
    sent: list[str] = []

    def send(to: str, body: str) -> str:
        sent.append(body)
        return "sent"

    approving = Toolkit(approver=queue, audit=[]).secured_tool(send, sends_out=True)
    refusing = Toolkit(audit=[], exfiltration="refuse").secured_tool(send, sends_out=True)
    quiet = Toolkit(audit=[]).secured_tool(send, name="note")  # sends nothing out
    token = "ghp_" + "Z9y8" * 9
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
