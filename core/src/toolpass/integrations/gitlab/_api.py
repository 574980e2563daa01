"""The engine's requests to GitLab's REST API (``/api/v4``): its token, one object, every
page of a list (``X-Next-Page``, at most ``max_pages``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from toolpass.integrations._kit import paged
from toolpass.integrations.base import Integration

__all__ = ["GitLabApi"]


class GitLabApi(Integration):
    """GitLab's requests, for :class:`~toolpass.integrations.gitlab.GitLab`."""

    _api: str  # "" when the connection's URL ends in /api/v4, else "/api/v4"

    # --- requests ----------------------------------------------------------------------
    def auth_headers(self) -> dict[str, str]:
        token = self.secret("token")
        if self.options.get("auth") == "oauth":
            return {"Authorization": f"Bearer {token}"}
        return {"PRIVATE-TOKEN": token}

    def _get(self, path: str, what: str, **kw: Any) -> Any:
        return self.get_json(self._api + path, what=what, **kw)

    def _pages(self, path: str, params: Mapping[str, str], what: str) -> Iterator[dict[str, Any]]:
        limit = int(self.options.get("max_pages") or 10)
        return paged(
            self,
            self._api + path,
            what=what,
            too_many=f"{what} has more than {limit} pages (max_pages); refusing to guess",
            style="page",
            items=None,
            each=dict,
            params=params,
            pages=limit,
            size_param="per_page",
            cursor="page",
            next_header="x-next-page",
        )
