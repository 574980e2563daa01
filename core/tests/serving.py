"""The set-up every system's tests share, written once: its fake served on 127.0.0.1, the
secrets its connection reads from the environment, the connection's settings, an engine on
them, and a ``Toolkit`` whose request hook asks that engine.

In a system's test module::

    fake = served(FakeBitbucket, populate)
    secrets = environment(BB_TOKEN="bb-api-token")
    conn = connection(id="bb", integration="bitbucket", api_token="env:BB_TOKEN")
    tp = engine(conn)
    kit = hooked(conn)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from toolpass import Toolkit, Toolpass, intercept


class Served(Protocol):
    """A fake a connection can point at."""

    url: str


F = TypeVar("F", bound=Served)
Connection = Callable[..., dict[str, Any]]


def served(make: Callable[[], AbstractContextManager[F]], populate: Callable[[F], F]) -> Any:
    """The ``fake`` fixture: a fake made by ``make``, running, filled by ``populate``."""

    @pytest.fixture(name="fake")
    def fake() -> Iterator[F]:
        with make() as server:
            yield populate(server)

    return fake


def environment(**values: str) -> Any:
    """The autouse ``secrets`` fixture: the environment variables connections read."""

    @pytest.fixture(name="secrets", autouse=True)
    def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return secrets


def connection(*, urls: tuple[str, ...] = (), **settings: Any) -> Connection:
    """``conn(fake, **extra)``: a fresh copy of ``settings`` with the fake's URL as ``url``
    and as each of ``urls`` (the connection's other endpoints), ``extra`` added or
    replacing."""

    def conn(fake: Served, **extra: Any) -> dict[str, Any]:
        mine = copy.deepcopy(settings)
        return {**mine, "url": fake.url, **dict.fromkeys(urls, fake.url), **extra}

    return conn


def written(name: str, text: Callable[[Any], str]) -> Any:
    """A fixture named after the file ``name`` (``key`` for ``key.json``): its path in
    the test's temporary folder, holding ``text(fake)`` (a key naming the fake's token
    endpoint, say)."""

    @pytest.fixture(name=Path(name).stem)
    def file(fake: Served, tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_text(text(fake))
        return path

    return file


def engine(conn: Connection, *needs: str) -> Any:
    """The ``tp`` fixture: an engine on ``conn(fake, *needs)`` (fixtures named by
    ``needs``), closed after the test."""

    @pytest.fixture(name="tp")
    def tp(fake: Served, request: pytest.FixtureRequest) -> Iterator[Toolpass]:
        with Toolpass([conn(fake, *map(request.getfixturevalue, needs))]) as running:
            yield running

    return tp


def hooked(conn: Connection, *needs: str) -> Any:
    """The ``kit`` fixture: a ``Toolkit`` asking an engine on ``conn(fake, *needs)`` and
    the audit events it writes; the request hook uninstalled after the test."""

    @pytest.fixture(name="kit")
    def kit(fake: Served, request: pytest.FixtureRequest) -> Iterator[tuple[Toolkit, list[Any]]]:
        events: list[Any] = []
        running = Toolpass([conn(fake, *map(request.getfixturevalue, needs))])
        yield Toolkit(permissions=running, audit=[events.append]), events
        intercept.uninstall()
        running.close()

    return kit
