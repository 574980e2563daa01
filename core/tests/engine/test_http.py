from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.proxy import FakeProxy
from fakes.server import FakeServer, Reply, Request
from fakes.tls import make_certs
from toolpass.wire.http import (
    ENGINE_REQUEST,
    HTTPClient,
    HTTPError,
    MalformedResponse,
    NetOptions,
)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:

        @fake.route("GET", "/hello")
        def hello(request: Request) -> dict[str, Any]:
            return {"hello": request.arg("name")}

        @fake.route("POST", "/echo")
        def echo(request: Request) -> Reply:
            return Reply(201, {"got": request.json()}, {"X-Trace": "t1"})

        @fake.route("GET", "/moved")
        def moved(request: Request) -> Reply:
            return Reply(302, None, {"Location": "/hello"})

        yield fake


@pytest.fixture
def client() -> Iterator[HTTPClient]:
    c = HTTPClient()
    yield c
    c.close()


def test_get_and_post_json(server: FakeServer, client: HTTPClient) -> None:
    answer = client.request("GET", f"{server.url}/hello?name=ada")
    assert (answer.status, answer.json()) == (200, {"hello": "ada"})
    answer = client.request("POST", f"{server.url}/echo", json={"a": [1]})
    assert (answer.status, answer.json(), answer.header("X-TRACE")) == (
        201,
        {"got": {"a": [1]}},
        "t1",
    )
    sent = server.seen("POST")[0]
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["user-agent"].startswith("toolpass/")


def test_connections_are_kept_alive(server: FakeServer, client: HTTPClient) -> None:
    for _ in range(5):
        assert client.request("GET", f"{server.url}/hello").status == 200
    assert len({r.client for r in server.requests}) == 1


def test_redirects_are_returned_not_followed(server: FakeServer, client: HTTPClient) -> None:
    answer = client.request("GET", f"{server.url}/moved")
    assert (answer.status, answer.header("location")) == (302, "/hello")
    assert [r.path for r in server.requests] == ["/moved"]


def test_stale_kept_alive_connection_is_retried_once(
    server: FakeServer, client: HTTPClient
) -> None:
    client.request("GET", f"{server.url}/hello")
    server.drop_connections()
    assert client.request("GET", f"{server.url}/hello?name=again").json() == {"hello": "again"}
    assert len({r.client for r in server.requests}) == 2


def test_timeout(server: FakeServer, client: HTTPClient) -> None:
    server.slow(1.0)
    with pytest.raises(HTTPError, match=r"no answer within 0.2s"):
        client.request("GET", f"{server.url}/hello", timeout=0.2)


def test_refused_connection() -> None:
    with FakeServer() as gone:
        url = gone.url
    with pytest.raises(HTTPError, match=r"connection failed|request failed"):
        HTTPClient().request("GET", f"{url}/x", timeout=1)


def test_not_json(server: FakeServer, client: HTTPClient) -> None:
    server.not_json()
    answer = client.request("GET", f"{server.url}/hello")
    with pytest.raises(MalformedResponse, match="not JSON"):
        answer.json()


def test_body_size_is_bounded(server: FakeServer) -> None:
    server.fail(200, body=b"x" * 2000)
    with pytest.raises(HTTPError, match="larger than 1000 bytes"):
        HTTPClient(max_body=1000).request("GET", f"{server.url}/hello")


def test_rejects_other_schemes(client: HTTPClient) -> None:
    with pytest.raises(HTTPError, match="not an http"):
        client.request("GET", "file:///etc/passwd")


def test_engine_requests_are_marked_for_the_request_hook(
    server: FakeServer, client: HTTPClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook patching http.client sees ENGINE_REQUEST set, and it is unset afterwards."""
    seen: list[bool] = []
    original = http.client.HTTPConnection.request

    def hook(self: http.client.HTTPConnection, *args: Any, **kwargs: Any) -> None:
        seen.append(ENGINE_REQUEST.get())
        original(self, *args, **kwargs)

    monkeypatch.setattr(http.client.HTTPConnection, "request", hook)
    client.request("GET", f"{server.url}/hello")
    assert seen == [True]
    assert ENGINE_REQUEST.get() is False
    conn = http.client.HTTPConnection("127.0.0.1", server.port)
    conn.request("GET", "/hello")
    conn.getresponse().read()
    conn.close()
    assert seen == [True, False]


def test_threads_share_the_pool(server: FakeServer, client: HTTPClient) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(10):
                assert client.request("GET", f"{server.url}/hello?name={i}").json() == {
                    "hello": str(i)
                }
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(server.requests) == 80
    assert len({r.client for r in server.requests}) <= 8


class TestTLS:
    def test_verified_against_ca_file(self, tmp_path: Path) -> None:
        certs = make_certs(tmp_path)
        with FakeServer(tls=(certs.cert_file, certs.key_file)) as fake:
            fake.add("GET", "/x", lambda r: {"ok": True})
            client = HTTPClient()
            with pytest.raises(HTTPError, match="TLS certificate not trusted"):
                client.request("GET", f"{fake.url}/x")
            answer = client.request(
                "GET", f"{fake.url}/x", options=NetOptions(ca_file=certs.ca_file)
            )
            assert answer.json() == {"ok": True}
            client.close()

    def test_server_name(self, tmp_path: Path) -> None:
        certs = make_certs(tmp_path, names=("api.internal",), ip=False)
        with FakeServer(tls=(certs.cert_file, certs.key_file)) as fake:
            fake.add("GET", "/x", lambda r: {"host": r.headers["host"]})
            client = HTTPClient()
            with pytest.raises(HTTPError, match="TLS certificate not trusted"):
                client.request("GET", f"{fake.url}/x", options=NetOptions(ca_file=certs.ca_file))
            named = NetOptions(ca_file=certs.ca_file, tls_server_name="api.internal")
            answer = client.request("GET", f"{fake.url}/x", options=named)
            assert answer.json() == {"host": f"127.0.0.1:{fake.port}"}
            client.close()

    def test_https_through_a_connect_proxy(self, tmp_path: Path) -> None:
        certs = make_certs(tmp_path)
        with FakeServer(tls=(certs.cert_file, certs.key_file)) as fake, FakeProxy() as proxy:
            fake.add("GET", "/x", lambda r: {"ok": True})
            options = NetOptions(ca_file=certs.ca_file, proxy_url=proxy.url)
            client = HTTPClient()
            assert client.request("GET", f"{fake.url}/x", options=options).json() == {"ok": True}
            assert client.request("GET", f"{fake.url}/x", options=options).json() == {"ok": True}
            client.close()
            assert proxy.seen == [f"CONNECT 127.0.0.1:{fake.port}"]


def test_http_through_a_proxy(server: FakeServer, client: HTTPClient) -> None:
    with FakeProxy() as proxy:
        answer = client.request(
            "GET", f"{server.url}/hello?name=p", options=NetOptions(proxy_url=proxy.url)
        )
        assert answer.json() == {"hello": "p"}
        assert proxy.seen == [f"GET {server.url}/hello?name=p"]
