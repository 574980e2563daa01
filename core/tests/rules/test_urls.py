"""toolpass's URL parser, checked against the HTTP clients' own: whatever host urllib3
(requests) or httpx would connect to is one of the hosts ``parse_url`` gives."""

from __future__ import annotations

import re

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass.rules.urls import normalize_host, parse_url
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url as urllib3_parse

LABELS = st.sampled_from(
    [
        "evil",
        "EVIL",
        "hooks",
        "trusted",
        "bücher",
        "straße",
        "xn--bcher-kva",
        "ex%41mple",
        "a-b",
        "0x7f",
        "1",
    ]
)
HOSTS = st.one_of(
    st.lists(LABELS, min_size=1, max_size=3).map(lambda ls: ".".join([*ls, "example"])),
    st.sampled_from(
        ["127.0.0.1", "[::1]", "[::FFFF:1.2.3.4]", "0x7f.1", "2130706433", "evil.example."]
    ),
)
TRICKS = st.sampled_from(["", "\\", "@", ":", "/", "?", "#", "%2f", "%40", "\\@", "..", "%5c"])
URLS = st.builds(
    lambda scheme, user, host, port, trick, path, query: (
        f"{scheme}{user}{host}{port}{trick}{path}{query}"
    ),
    st.sampled_from(["http://", "https://", "HTTPS://", "//", ""]),
    st.one_of(
        st.just(""),
        st.builds(lambda u, t: f"{u}{t}@", st.sampled_from(["u", "u:p", "a@b"]), TRICKS),
    ),
    HOSTS,
    st.sampled_from(["", ":80", ":443", ":8080", ":"]),
    TRICKS,
    st.sampled_from(["", "/x", "/a%2Fb", "/%7Efoo", "/é", "\\y"]),
    st.sampled_from(["", "?d=1", "?to=eve@evil.example&x=%26", "#frag@other.example"]),
)


def _with_scheme(url: str) -> str:
    """``url`` as a client is given it: a link written without a scheme gets ``//``."""
    return url if re.match(r"([a-zA-Z][a-zA-Z0-9+.-]*:)?//", url) else "//" + url


def _normal(host: str) -> set[str]:
    return set(normalize_host(host.strip("[]")))


def _urllib3_host(url: str) -> str | None:
    try:
        return urllib3_parse(_with_scheme(url)).host
    except LocationParseError:  # urllib3 refuses it
        return None


def _httpx_host(url: str) -> str | None:
    try:
        return httpx.URL(_with_scheme(url)).host or None
    except (httpx.InvalidURL, UnicodeError):  # httpx refuses it (an IDNA error passes)
        return None


@settings(max_examples=600, deadline=None)
@given(URLS)
def test_every_host_a_client_connects_to_is_a_host_of_the_url(url):
    ours = parse_url(url)
    theirs = [h for h in (_urllib3_host(url), _httpx_host(url)) if h]
    if ours is None and _with_scheme(url) != url:
        return  # written without a scheme and not as a link (an address, ``user@host``)
    if ours is None:
        # We refuse it; no client connects anywhere valid either.
        assert not any(_normal(h) for h in theirs), (url, theirs)
        return
    for host in theirs:
        spellings = _normal(host)
        assert not spellings or spellings & set(ours.hosts), (url, host, ours.hosts)
    assert all(h for h in ours.hosts)


@settings(deadline=None)
@given(URLS)
def test_a_url_has_the_path_urllib3_sends(url):
    ours = parse_url(url)
    try:
        theirs = urllib3_parse(_with_scheme(url))
    except LocationParseError:
        return
    if ours is None or not theirs.host:
        return
    path = (theirs.path or "").rstrip("/")
    assert ours.path.rstrip("/") == parse_url(f"http://x.example{path}").path.rstrip("/")


@pytest.mark.parametrize(
    ("url", "hosts"),
    [
        ("http://evil.example\\@hooks.trusted.example/", {"evil.example", "hooks.trusted.example"}),
        ("http://u:p@EVIL.Example.:8080/x", {"evil.example"}),
        ("https://bücher.de/", {"xn--bcher-kva.de"}),
        ("https://xn--bcher-kva.de/", {"xn--bcher-kva.de"}),
        ("https://straße.de/", {"xn--strae-oqa.de", "strasse.de"}),
        ("http://ex%41mple.com/", {"example.com"}),
        ("http://0x7f.1/", {"127.0.0.1"}),
        ("evil.example/x", {"evil.example"}),
        ("//evil.example/x", {"evil.example"}),
    ],
)
def test_hosts(url, hosts):
    parsed = parse_url(url)
    assert parsed is not None
    assert set(parsed.hosts) == hosts


def test_one_path_however_it_is_encoded():
    paths = {parse_url(u).path for u in ("http://a.example/%7Efoo/x", "http://a.example/~foo/x")}
    assert paths == {"/~foo/x"}


@pytest.mark.parametrize("text", ["eve@evil.example", "Riverside View", "mailto:a@b.example", ""])
def test_what_is_not_a_url(text):
    assert parse_url(text) is None
