"""Reading a request's arguments for the route overrides (``match_request``) of integrations.

The route table's own ``{query.x}`` and ``{body.x}`` read one place each. Several APIs take an
argument from either (GitLab's Grape API and Slack's Web API merge the query string with a
form or JSON body), some nest it (Jira's ``fields.project.key``), some send forms as
``multipart/form-data`` (Slack's ``files.upload``). These helpers read them, and answer
``CONFLICT`` when two places disagree: then the request names no single resource.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from toolpass.integrations.routes import Request, fields

__all__ = ["CONFLICT", "either", "fill", "form", "nested", "scalar"]


class _Conflict:
    def __repr__(self) -> str:
        return "CONFLICT"


CONFLICT: Final = _Conflict()
_BOUNDARY = re.compile(r"boundary=\"?([^\";]{1,200})\"?", re.I)
_NAME = re.compile(rb"""\bname="([^"]{1,200})\"""", re.I)
_MAX_PARTS = 200


def form(request: Request) -> Mapping[str, Any]:
    """The body as a JSON object, a urlencoded form or a multipart form (its fields without
    a file name); empty when it is none of them."""
    cached = request.__dict__.get("_toolpass_form")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    kind = request.headers.get("content-type", "")
    found: Mapping[str, Any]
    if kind.lower().startswith("multipart/form-data"):
        found = _multipart(kind, request.body or b"")
    else:
        found = request.form
    request.__dict__["_toolpass_form"] = found
    return found


def _multipart(kind: str, body: bytes) -> dict[str, Any]:
    m = _BOUNDARY.search(kind)
    if m is None:
        return {}
    out: dict[str, Any] = {}
    delimiter = b"--" + m.group(1).encode("latin-1")
    for part in body.split(delimiter)[1 : _MAX_PARTS + 1]:
        head, sep, value = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        disposition = next(
            (
                line
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-disposition:")
            ),
            b"",
        )
        name = _NAME.search(disposition)
        if name is None or b"filename" in disposition.lower():
            continue
        try:
            text = value.removesuffix(b"\r\n").decode("utf-8")
        except UnicodeDecodeError:
            continue
        key = name.group(1).decode("utf-8", "replace")
        out[key] = CONFLICT if key in out and out[key] != text else text
    return out


def either(request: Request, name: str) -> Any:
    """``name`` from the body or the query string: None when neither has it, ``CONFLICT``
    when both do and they differ (or the query repeats it with different values)."""
    body = form(request).get(name)
    values = request.query.get(name)
    query: Any = None
    if values:
        query = values[0] if len(set(values)) == 1 else CONFLICT
    if body is None or body == "":
        return query
    if query is None or query == "":
        return body
    return body if str(body) == str(query) else CONFLICT


def nested(request: Request, path: str) -> Any:
    """A dotted path into the JSON body (``fields.project.key``); None when absent."""
    value: Any = form(request)
    for key in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def scalar(value: Any) -> str | None:
    """A value usable in a resource: a non-empty string or an integer (not a boolean)."""
    if value is CONFLICT or isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    return text or None


def fill(template: str, value_of: Callable[[str], Any]) -> str | None:
    """``template`` with each ``{field}`` replaced by ``value_of(field)``; None when one has
    no usable value."""
    values: dict[str, str] = {}
    for name in fields(template):
        value = scalar(value_of(name))
        if value is None:
            return None
        values[name] = value
    return re.sub(r"\{([^{}]+)\}", lambda m: values[m.group(1)], template)
