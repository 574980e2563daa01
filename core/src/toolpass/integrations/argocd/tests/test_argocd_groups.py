"""A user's groups from a groups source (groups_resolve, groups_url) are a list of group
names or nothing: any other answer is unknown, never read as groups."""

from __future__ import annotations

from typing import Any

import pytest
from fakes.argocd import KUBE_TOKEN, TOKEN, FakeArgoCD, populate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving import environment, served

from toolpass import Toolpass

from .test_argocd import conn

fake = served(FakeArgoCD, populate)
secrets = environment(ARGOCD_TOKEN=TOKEN, KUBE_TOKEN=KUBE_TOKEN)

NOT_A_LIST = (
    st.text(min_size=1)
    | st.dictionaries(st.sampled_from(["sre", "auditors"]), st.booleans(), min_size=1)
    | st.integers()
)


@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=NOT_A_LIST)
def test_a_callable_answering_no_list_of_names_is_unknown(fake: FakeArgoCD, answer: Any) -> None:
    """``{"sre": False}`` is not membership of sre; a string is not its letters."""
    with Toolpass([conn(fake, groups=None, groups_resolve=lambda _: answer)]) as tp:
        d = tp.check("sam@example.com", "argo", "applications.delete", "app:billing")
    assert d.decision == "unknown", d.reason
    assert "list of group names" in d.reason


def test_a_list_of_names_is_the_users_groups(fake: FakeArgoCD) -> None:
    with Toolpass([conn(fake, groups=None, groups_resolve=lambda _: ("sre",))]) as tp:
        assert tp.check("sam@example.com", "argo", "applications.delete", "app:billing").allowed


@pytest.mark.parametrize("groups", [{"sre": False}, "sre", ["sre", "\x00"], [" "]])
def test_a_groups_service_answering_no_list_of_names_is_unknown(
    fake: FakeArgoCD, groups: Any
) -> None:
    from fakes.server import FakeServer

    with FakeServer() as service:
        service.route("GET", "/groups")(lambda _: {"groups": groups})
        settings = conn(fake, groups=None, groups_url=service.url + "/groups")
        with Toolpass([settings]) as tp:
            d = tp.check("sam@example.com", "argo", "applications.delete", "app:billing")
    assert d.decision == "unknown", d.reason
