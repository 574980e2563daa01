"""A user's groups from ``groups_resolve`` are a list of group names or nothing: a mapping
such as ``{"payments-devs": False}`` is not membership, and a generator's names are the
user's groups (not consumed by the check of them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.kubernetes import FakeKubernetes

from toolpass.engine import Toolpass

from .test_kubernetes import DANA, DEPLOY, conn, k8s  # noqa: F401 - the fake cluster


@pytest.mark.parametrize(
    "answer",
    [{"payments-devs": False}, {"payments-devs": True}, "payments-devs", b"payments-devs", 7],
)
def test_a_callable_answering_no_list_of_names_is_unknown(
    k8s: FakeKubernetes,  # noqa: F811
    answer: Any,
) -> None:
    with Toolpass([conn(k8s.url, groups=None, groups_resolve=lambda _: answer)]) as tp:
        d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown", d.reason
    assert "did not return a list of group names" in d.reason
    assert k8s.reviews() == []


def test_a_callables_generator_of_names_is_the_users_groups(
    k8s: FakeKubernetes,  # noqa: F811
) -> None:
    def resolve(email: str) -> Iterator[str]:
        yield "payments-devs"

    with Toolpass([conn(k8s.url, groups=None, groups_resolve=resolve)]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
