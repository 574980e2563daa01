"""Private data leaving, encoded: hex and base64 runs in what a call sends are decoded and
the private values read are looked for in them, in any of their spellings (case, width,
separators), at any offset of a longer encoding, cut anywhere, with or without padding."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import toolpass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass import Session, ToolRefused

from .conftest import USER

_FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_CARD_DIGITS = st.text("0123456789", min_size=12, max_size=19)
_LOCAL = st.text("abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)


@st.composite
def _spelled(draw: Any) -> tuple[str, str]:
    """``(value as read, the same value spelled another way)``."""
    if draw(st.booleans()):
        digits = draw(_CARD_DIGITS)
        read = " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))
        sep = draw(st.sampled_from(["", "-", ".", " ", "/"]))
        return read, sep.join(digits[i : i + 3] for i in range(0, len(digits), 3))
    address = f"{draw(_LOCAL)}@corp.example"
    return address, draw(st.sampled_from([address.upper(), address.title(), address]))


@st.composite
def _encoded(draw: Any, spelled: str) -> str:
    """``spelled`` inside a longer text, hex- or base64-encoded, cut anywhere around it."""
    before = draw(st.text("xyz :", max_size=5))
    after = draw(st.text("xyz :", max_size=5))
    data = (before + spelled + after).encode()
    how = draw(st.sampled_from(["hex", "HEX", "b64", "b64url"]))
    if how in ("hex", "HEX"):
        text = data.hex()
        text = text.upper() if how == "HEX" else text
        start = draw(st.integers(0, 2 * len(before.encode())))
        end = len(text) - draw(st.integers(0, 2 * len(after.encode())))
        return text[start:end]
    encode = base64.urlsafe_b64encode if how == "b64url" else base64.b64encode
    text = encode(data).decode()
    # Cut anywhere before the first character that holds only the value's bits, and after
    # the last one: the value's first and last bytes may be cut in part.
    start = draw(st.integers(0, -(-len(before.encode()) * 8 // 6)))
    end = draw(st.integers(len(data[: len(data) - len(after.encode())]) * 8 // 6, len(text)))
    return text[start:end]


def _refused(read: str, sent: str) -> bool:
    kit = toolpass.Toolkit(audit=[], private_data="refuse", exfiltration="ignore")
    wallet = kit.secured_tool(lambda: {"value": read}, effect="read", reads_private=True)
    post = kit.secured_tool(lambda text: "posted", sends_out=True)
    with Session(USER).active():
        wallet()
        try:
            post(f"hello {sent} bye")
        except ToolRefused as refused:
            return refused.code == "private_data"
    return False


@_FAST
@given(data=st.data(), pair=_spelled())
def test_an_encoded_private_value_is_found_in_any_spelling(data: Any, pair: Any) -> None:
    read, spelled = pair
    assert _refused(read, data.draw(_encoded(spelled)))


@_FAST
@given(data=st.data(), pair=_spelled())
def test_an_encoded_private_value_is_found_split_by_spaces(data: Any, pair: Any) -> None:
    """An encoding split over lines or groups (as mail bodies wrap base64) is one run."""
    read, spelled = pair
    sent = data.draw(_encoded(spelled))
    width = data.draw(st.integers(4, 76))
    assert _refused(read, "\n".join(sent[i : i + width] for i in range(0, len(sent), width)))


@pytest.mark.parametrize(
    "sent",
    [
        base64.b64encode(b"a weekly report, nothing in it").decode(),
        b"the weekly status".hex(),
        "deadbeef" * 10,
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 3,
    ],
)
def test_encoded_text_without_a_private_value_is_sent(sent: str) -> None:
    assert not _refused("4111 1111 1111 1111, alice.private@corp.example", sent)
