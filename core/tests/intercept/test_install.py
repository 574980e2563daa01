"""``intercept.install()`` hooks a library only at a version its hook was tested on, and only
when the functions it replaces still take the parameters the hook was written for.

The installed version is faked by replacing ``toolpass.intercept.version_of`` (the
environment's answer, not toolpass's logic); a changed signature by replacing httpx's
function with one that takes other parameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from toolpass import intercept
from toolpass.intercept.clients import in_range

ORIGINAL = httpx.Client._send_single_request


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    intercept.uninstall()
    monkeypatch.delenv(intercept.UNTESTED_ENV, raising=False)
    yield
    intercept.uninstall()


@pytest.fixture
def old_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    real = intercept.version_of
    monkeypatch.setattr(
        intercept, "version_of", lambda name: "0.20.0" if name == "httpx" else real(name)
    )


def test_install_hooks_every_importable_library() -> None:
    assert set(intercept.install()) == set(intercept.LIBRARIES)
    assert httpx.Client._send_single_request is not ORIGINAL
    intercept.uninstall()
    assert httpx.Client._send_single_request is ORIGINAL


@pytest.mark.usefixtures("old_httpx")
def test_an_untested_version_is_refused_and_nothing_is_hooked() -> None:
    with pytest.raises(RuntimeError) as info:
        intercept.install()
    message = str(info.value)
    assert "httpx 0.20.0" in message
    assert ">=0.27,<1" in message
    assert "install(untested=('httpx',))" in message
    assert "TOOLPASS_UNTESTED_CLIENTS=httpx" in message
    assert intercept.installed() == []
    assert httpx.Client._send_single_request is ORIGINAL


@pytest.mark.usefixtures("old_httpx")
def test_the_developer_may_accept_an_untested_version() -> None:
    assert "httpx" in intercept.install(untested=("httpx",))
    assert httpx.Client._send_single_request is not ORIGINAL


@pytest.mark.usefixtures("old_httpx")
def test_the_environment_may_accept_an_untested_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(intercept.UNTESTED_ENV, "aiohttp, httpx")
    assert "httpx" in intercept.install()


def test_a_library_without_a_version_is_untested(monkeypatch: pytest.MonkeyPatch) -> None:
    real = intercept.version_of
    monkeypatch.setattr(
        intercept, "version_of", lambda name: None if name == "aiohttp" else real(name)
    )
    with pytest.raises(RuntimeError, match=r"aiohttp \(version unknown\)"):
        intercept.install()


def test_changed_internals_are_never_patched(monkeypatch: pytest.MonkeyPatch) -> None:
    def changed(self: Any, request: Any, *, auth: Any) -> Any:
        raise AssertionError("never called")

    monkeypatch.setattr(httpx.Client, "_send_single_request", changed)
    monkeypatch.setenv(intercept.UNTESTED_ENV, "httpx")  # accepting the version is not enough
    with pytest.raises(RuntimeError) as info:
        intercept.install()
    assert "Client._send_single_request" in str(info.value)
    assert intercept.installed() == []
    assert httpx.Client._send_single_request is changed


# --- the version comparison, against packaging's -------------------------------------------

releases = st.lists(st.integers(0, 30), min_size=1, max_size=4).map(lambda n: ".".join(map(str, n)))
operators = st.sampled_from([">=", "<=", "==", "!=", ">", "<"])


@given(releases, st.lists(st.tuples(operators, releases), min_size=1, max_size=3))
def test_in_range_agrees_with_packaging(version: str, clauses: list[tuple[str, str]]) -> None:
    spec = ",".join(op + bound for op, bound in clauses)
    assert in_range(version, spec) == (Version(version) in SpecifierSet(spec))


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.28.1", True), ("0.27", True), ("0.26.9", False), ("1.0", False), ("1.0rc1", False)],
)
def test_in_range_examples(version: str, expected: bool) -> None:
    assert in_range(version, ">=0.27,<1") is expected
