"""``parse_url`` against every HTTP client's own parsing, over the characters that make
clients disagree: whatever host urllib3, requests, httpx, aiohttp (yarl) or ``urllib``
(http.client) would connect to is one of the hosts ``parse_url`` gives."""

from __future__ import annotations

import http.client
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest
import requests
import yarl
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass.rules.urls import normalize_host, parse_url
from toolpass.rules.validators import url_host
from urllib3.util import parse_url as urllib3_parse

CLIENTS: dict[str, Callable[[str], str | None]] = {
    "urllib3": lambda url: urllib3_parse(url).host,
    "requests": lambda url: urllib3_parse(requests.Request("GET", url).prepare().url).host,
    "httpx": lambda url: httpx.URL(url).host,
    "aiohttp": lambda url: yarl.URL(url).host,
    "urllib": lambda url: _urllib_host(url),
}


def _urllib_host(url: str) -> str | None:
    """The host http.client connects to for ``url``, as ``urllib.request`` gives it."""
    return http.client.HTTPConnection(urlsplit(url).netloc.rpartition("@")[2]).host


PIECES = st.sampled_from(
    [
        "evil",
        "hooks",
        "example",
        ".",
        "\u3002",
        "\uff0e",
        "\uff61",
        "\t",
        "\n",
        "\\",
        "@",
        ":",
        "%2e",
        "%40",
        "#",
        "?",
        "/",
        "[",
        "]",
        "\u200b",
        "\u00ad",
        "ß",
        "0x7f",
        "1",
    ]
)
URLS = st.builds(
    lambda scheme, parts: scheme + "".join(parts),
    st.sampled_from(["http://", "https://", "HTTP://"]),
    st.lists(PIECES, min_size=1, max_size=8),
)


#: How the clients refuse a URL they cannot parse: a ValueError (urllib3's
#: LocationParseError, requests' InvalidURL, yarl, an IDNA error passing through httpx),
#: httpx's InvalidURL or http.client's; yarl raises IndexError on an empty bracketed host
#: (``http://[]@``).
REFUSALS = (ValueError, httpx.InvalidURL, http.client.InvalidURL, IndexError)


def _connects_to(client: Callable[[str], str | None], url: str) -> set[str]:
    try:
        host = client(url)
    except REFUSALS:
        return set()  # the client refuses it: it connects nowhere
    return set(normalize_host((host or "").strip("[]")))


@settings(max_examples=800, deadline=None)
@given(URLS)
def test_every_host_any_client_connects_to_is_a_host_of_the_url(url):
    ours = parse_url(url)
    for name, client in CLIENTS.items():
        theirs = _connects_to(client, url)
        if theirs:
            assert ours is not None, (name, url, theirs)
            assert theirs & set(ours.hosts), (name, url, theirs, ours.hosts)


@pytest.mark.parametrize(
    "url",
    [
        "https://ev\til.example/",  # urllib and yarl drop the tab: evil.example
        "https://evil\u3002example/",  # httpx and yarl read an ideographic dot as a dot
        "https://hooks.trusted.example\t@evil.example/",
        "evil.example.://hooks.trusted.example/",  # urllib3 reads no scheme: evil.example
    ],
)
def test_url_host_reads_what_urllib_and_aiohttp_connect_to(url):
    hosts = {h for client in CLIENTS.values() for h in _connects_to(client, url)}
    assert hosts & {"evil.example"}
    with pytest.raises(ValueError):
        url_host("hooks.trusted.example", "ev.example")(url)
    assert "evil.example" in parse_url(url).hosts
