"""What every hook does to a body: read it for the check, and hand back something that sends
the same bytes, in the same chunks, whatever the chunks hold and wherever the limit falls."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass.intercept import check as hook

chunks = st.lists(st.binary(max_size=40) | st.text(max_size=20), max_size=12)
limits = st.integers(0, 300)


def _bytes(parts: list[bytes | str]) -> bytes:
    return b"".join(
        p.encode("utf-8", "surrogateescape") if isinstance(p, str) else p for p in parts
    )


@given(chunks, limits)
def test_a_generator_is_replayed_chunk_for_chunk(parts: list[bytes | str], limit: int) -> None:
    def body() -> Iterator[bytes | str]:
        yield from parts

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hook, "BODY_LIMIT", limit)
        seen, replay = hook.peek(body())
    assert list(replay) == parts
    assert seen == (_bytes(parts) if sum(map(len, parts)) <= limit else None)


@given(st.binary(max_size=500), limits, st.integers(0, 20))
def test_a_file_is_put_back_where_it_was(data: bytes, limit: int, start: int) -> None:
    file = io.BytesIO(data)
    file.seek(min(start, len(data)))
    rest = data[file.tell() :]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hook, "BODY_LIMIT", limit)
        seen, replay = hook.peek(file)
    assert replay is file
    assert file.read() == rest
    assert seen == (rest if len(rest) <= limit else None)


@given(st.lists(st.binary(max_size=40), max_size=12), limits)
def test_an_unseekable_file_is_replayed_whole(parts: list[bytes], limit: int) -> None:
    class Pipe(io.RawIOBase):
        def __init__(self) -> None:
            self.left = b"".join(parts)

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            size = len(self.left) if size < 0 else size
            out, self.left = self.left[:size], self.left[size:]
            return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hook, "BODY_LIMIT", limit)
        _, replay = hook.peek(Pipe())
    assert b"".join(replay) == b"".join(parts)


@given(chunks, limits)
async def test_an_async_iterable_is_replayed_chunk_for_chunk(
    parts: list[bytes | str], limit: int
) -> None:
    async def body() -> AsyncIterator[bytes | str]:
        for part in parts:
            yield part

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hook, "BODY_LIMIT", limit)
        seen, replay = await hook.apeek(body())
    assert [part async for part in replay] == parts
    assert seen == (_bytes(parts) if sum(map(len, parts)) <= limit else None)
