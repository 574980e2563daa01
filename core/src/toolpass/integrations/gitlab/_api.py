"""The engine's requests to GitLab's REST API (``/api/v4``): its token, one object, every
page of a list (``X-Next-Page``, at most ``max_pages``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from toolpass.integrations.base import Integration
from toolpass.wire.http import MalformedResponse

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
        def read_page(page: str | None) -> tuple[list[dict[str, Any]], str | None]:
            query = {**params, "per_page": "100", "page": page or "1"}
            answer = self.answer("GET", self._api + path, what=what, params=query)
            if answer.status != 200:
                raise self.failure(answer, what)
            items = self.parse(answer, what, list)
            if not all(isinstance(item, dict) for item in items):
                raise MalformedResponse(f"gitlab's answer to {what} holds a non-object")
            following = (answer.header("x-next-page") or "").strip()
            if following and not following.isdigit():
                raise MalformedResponse(f"gitlab's X-Next-Page for {what} is not a number")
            return items, following

        limit = int(self.options.get("max_pages") or 10)
        too_many = f"{what} has more than {limit} pages (max_pages); refusing to guess"
        return self.pages(read_page, limit=limit, too_many=too_many)
