"""A user's groups as the deployment says, for systems that review a user with their groups
but cannot read them (Kubernetes, Argo CD): the options ``groups_url`` (a service answering
``GET <url>?email=&system=&connection=`` with ``{"groups": [...]}``; 404 or ``null``: not
known), with ``groups_token``, or ``groups_resolve`` (a callable given in code).

An answer that is not a list of group names (a string, a mapping such as ``{"sre": false}``,
a name that is blank or holds control characters) fails; it is never read as groups.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

from toolpass.integrations.base import Integration, LookupFailed
from toolpass.wire import budget
from toolpass.wire.http import NetOptions

__all__ = ["group_list", "name_ok", "source_groups"]


def name_ok(name: object) -> bool:
    """A group name: a string, not blank, without control characters."""
    return (
        isinstance(name, str)
        and bool(name.strip())
        and not any(unicodedata.category(c)[0] == "C" for c in name)
    )


def group_list(groups: object) -> bool:
    """Whether ``groups`` is a list (or tuple) of group names."""
    return isinstance(groups, (list, tuple)) and all(name_ok(g) for g in groups)


def source_groups(system: Integration, email: str) -> list[str] | None:
    """The groups ``system``'s ``groups_resolve`` or ``groups_url`` answers for ``email``;
    None when the source does not know the user."""
    if system.options.get("groups_resolve"):
        return _resolved(system.options["groups_resolve"], email)
    return _served(system, email)


def _resolved(resolve: Callable[[str], Any], email: str) -> list[str] | None:
    try:
        found = resolve(email)
    except Exception as e:
        raise LookupFailed(f"the groups callable failed ({type(e).__name__}: {e})")
    if found is None:
        return None
    fits = isinstance(found, Iterable) and not isinstance(found, (str, bytes, Mapping))
    names = list(found) if fits else None
    if not group_list(names):
        raise LookupFailed("the groups callable did not return a list of group names")
    return names


def _served(system: Integration, email: str) -> list[str] | None:
    options = system.options
    url = str(options["groups_url"])
    query = urlencode({"email": email, "system": system.name, "connection": system.config.id})
    headers = {}
    if options.get("groups_token") is not None:
        headers["Authorization"] = f"Bearer {system.secret('groups_token')}"
    answer = system.http.request(
        "GET",
        f"{url}{'&' if '?' in url else '?'}{query}",
        headers=headers,
        timeout=budget.remaining(system.config.timeout),
        options=NetOptions(),  # the deployment's own service, as for identity: http
    )
    if answer.status == 404:
        return None
    if answer.status != 200:
        raise LookupFailed(f"the groups service answered HTTP {answer.status}")
    data = answer.json()
    if not isinstance(data, dict) or "groups" not in data:
        raise LookupFailed("the groups service's answer has no groups")
    if data["groups"] is None:
        return None
    if not group_list(data["groups"]):
        raise LookupFailed("the groups service's answer is not a list of group names")
    return list(data["groups"])
