"""Route tables: which action, on which resource, an HTTP request to a system performs.

A table is data: rows of ``[method, path template, action, resource template, effect, flags]``
(``routes.json`` or ``routes.json.gz`` in each system's folder, beside its ``generate.py``,
the generator). Matching walks a trie of path segments per method, so its cost follows the
path's depth, not the table's size.

Path templates: literal segments, ``{name}`` (one whole segment), ``{name+}`` (the rest of
the path, last only), or a segment mixing both (``{ref}.zip``). Parameters are
percent-decoded after the path is split, so an encoded ``%2F`` stays inside its segment.
``normal_path`` spells a request's path the one way the trie reads it (as the server
resolves it), or says it cannot.

Resource templates fill ``{name}`` from path parameters, ``{query.name}`` from the query
string and ``{body.name}`` from the body, read as its Content-Type says (a JSON object, a
urlencoded form), never guessed. A field the request does not carry, or carries ambiguously
(twice, or in a body that cannot be read), leaves the resource unresolved (``None``).

Flags: ``u`` the response carries untrusted content, ``s`` the request sends data out, ``a``
the request is about the agent itself (identity, rate limits, search) and needs no user
permission.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final
from urllib.parse import parse_qs, quote, unquote, unquote_plus

from toolpass.rules.lazy import lazy_pattern
from toolpass.rules.scope import escapes

EFFECTS = ("read", "write", "destructive")
_PARAM = lazy_pattern(r"\{([A-Za-z_][A-Za-z0-9_.-]*)(\+?)\}")


@dataclass(frozen=True, slots=True)
class Route:
    """One route: a request of ``method`` to ``path`` performs ``action`` on ``resource``."""

    method: str
    path: str
    action: str
    resource: str
    effect: str
    untrusted: bool = False
    sends_out: bool = False
    agent: bool = False

    @classmethod
    def row(cls, row: list[str] | tuple[str, ...]) -> Route:
        """A route from a table row ``[method, path, action, resource, effect, flags]``."""
        method, path, action, resource, effect, *rest = row
        flags = rest[0] if rest else ""
        if effect not in EFFECTS:
            raise ValueError(f"route {method} {path}: effect {effect!r} is not one of {EFFECTS}")
        unknown = set(flags) - set("usa")
        if unknown:
            raise ValueError(f"route {method} {path}: unknown flags {''.join(sorted(unknown))}")
        return cls(
            method.upper(), path, action, resource, effect, "u" in flags, "s" in flags, "a" in flags
        )

    @property
    def flags(self) -> str:
        return "u" * self.untrusted + "s" * self.sends_out + "a" * self.agent


class _Ambiguous:
    def __repr__(self) -> str:
        return "AMBIGUOUS"


#: A body field whose value cannot be known: a JSON key given twice, or any field of a body
#: that cannot be read. It is never a usable value (``fill`` leaves the resource unresolved).
AMBIGUOUS: Final = _Ambiguous()


class _Unreadable(Mapping[str, Any]):
    """The fields of a body that cannot be read: every one of them may be there, and each is
    ``AMBIGUOUS``; none can be listed."""

    def __getitem__(self, key: str) -> Any:
        return AMBIGUOUS

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


#: ``Request.form`` of a body that cannot be read (``UNREAD``, an unknown or missing
#: Content-Type, invalid UTF-8, a compressed body, JSON sent as a form or a form as JSON).
UNREADABLE: Final = _Unreadable()


class _Unread(bytes):
    def __repr__(self) -> str:
        return "UNREAD"


#: The body of a request whose body could not be read (the client could not hand it over,
#: or it is compressed). Empty as bytes, so it carries no text; its fields are UNREADABLE.
#: Integrations that build a Request from another pass it on with ``request.body``.
UNREAD: Final[bytes] = _Unread()
_IDENTITY = frozenset({"", "identity", "aws-chunked"})


def _json_kind(kind: str) -> bool:
    return (
        kind == "application/json"
        or kind.endswith("+json")
        or kind.startswith("application/x-amz-json-")
    )


def _fields_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose repeated keys are ``AMBIGUOUS`` (servers keep the first or the last)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        out[key] = AMBIGUOUS if key in out else value
    return out


class Request:
    """What the router sees of an outgoing request. The body is parsed only when asked;
    ``body`` is None or ``b""`` when there is none, ``UNREAD`` when it could not be read
    (a compressed body, with a Content-Encoding other than ``identity``, is ``UNREAD``)."""

    __slots__ = ("__dict__", "body", "headers", "host", "method", "path", "query_string")

    def __init__(
        self,
        method: str,
        path: str,
        query_string: str = "",
        headers: Mapping[str, str | bytes] | None = None,
        body: bytes | None = None,
        host: str = "",
    ) -> None:
        self.method = method.upper()
        self.path = path or "/"
        self.query_string = query_string
        given = headers or {}
        self.headers = {
            str(k).lower(): v.decode("latin-1") if isinstance(v, bytes) else str(v)
            for k, v in given.items()
        }
        if len(self.headers) < len(given):  # a name spelled twice ("Content-Type", "content-type")
            self.headers = _joined(given)
        encoding = self.headers.get("content-encoding")
        if body and encoding is not None and not _encodings(encoding) <= _IDENTITY:
            body = UNREAD
        self.body = body
        self.host = host  # the host the request goes to, lower-cased

    @cached_property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.query_string, keep_blank_values=True)

    @cached_property
    def form(self) -> Mapping[str, Any]:
        """The body's fields, read as its Content-Type says: a JSON object (``application/
        json``, ``+json``, AWS's ``x-amz-json``) or a urlencoded form (a field given twice is a
        list). Empty for an empty body or one that is not an object; ``UNREADABLE`` when the
        body cannot be read as its type says, or its type says nothing we can read."""
        data = self.body
        if not data:
            return UNREADABLE if data is UNREAD else {}
        kind = self.headers.get("content-type", "").partition(";")[0].strip().lower()
        try:
            text = data.decode("utf-8")
            if _json_kind(kind):
                parsed = json.loads(text, object_pairs_hook=_fields_once)
                return parsed if isinstance(parsed, dict) else {}
            if kind != "application/x-www-form-urlencoded" or text.lstrip()[:1] in ("{", "["):
                return UNREADABLE
            pairs = parse_qs(text, keep_blank_values=True)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return UNREADABLE
        return {k: v[0] if len(v) == 1 else v for k, v in pairs.items()}

    @cached_property
    def text(self) -> str:
        """The body's text, to look into: as sent, then again with form fields unquoted and
        JSON strings unescaped, whatever the Content-Type says, so that nothing a server might
        decode is missed."""
        data = self.body
        if not data:
            return ""
        raw = data.decode("utf-8", "replace")
        parts = [raw]
        if "%" in raw or "+" in raw:
            parts.append(unquote_plus(raw))
        if "\\" in raw:  # escapes (\u0073): the strings as JSON reads them
            with contextlib.suppress(ValueError, RecursionError):  # not JSON
                parts.extend(_strings(json.loads(raw, object_pairs_hook=_flat)))
        return "\n".join(parts)


def _joined(headers: Mapping[str, str | bytes]) -> dict[str, str]:
    """Headers by lower-case name, the values of a name given twice joined, as HTTP does."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        key = str(name).lower()
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        known = out.get(key)
        out[key] = text if known is None or known == text else f"{known}, {text}"
    return out


def _encodings(header: str) -> set[str]:
    return {part.strip().lower() for part in header.split(",")}


def _flat(pairs: list[tuple[str, Any]]) -> list[Any]:
    """A JSON object as the list of its keys and values, repeated keys kept."""
    return [item for pair in pairs for item in pair]


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(item)


_PCHAR = "!$&'()*+,;=:@~"  # kept as they are in a path segment (with letters, digits, "_.-")
_DOTS = frozenset({".", ".."})


def normal_path(path: str) -> str | None:
    """``path`` as the server resolves it, spelled the one way routes are matched: each
    segment percent-decoded and re-encoded only where it must be (``%70ulls`` is ``pulls``;
    an encoded ``/`` stays encoded, inside its segment), empty segments dropped, ``.`` and
    ``..`` resolved. None when servers could read it differently: ``..`` above the root, a
    dot segment spelled encoded (also beside an encoded ``/``: ``a%2F..``), a Java path
    parameter (``;``), a backslash, or percent-encoding that is not UTF-8."""
    if not ("%" in path or "//" in path or "/." in path or ";" in path or "\\" in path):
        return path
    out: list[str] = []
    for raw in path.split("/"):
        if ";" in raw or "\\" in raw:
            return None
        if "%" in raw:
            try:
                segment = unquote(raw, errors="strict")
            except UnicodeDecodeError:
                return None
            if "\\" in segment or not _DOTS.isdisjoint(segment.split("/")):
                return None  # servers that decode before they resolve see a dot segment
            out.append(quote(segment, safe=_PCHAR))
        elif raw == "..":
            if not out:
                return None
            out.pop()
        elif raw and raw != ".":
            out.append(raw)
    trailing = bool(out) and path.endswith(("/", "/.", "/.."))
    return "/" + "/".join(out) + ("/" if trailing else "")


@dataclass(frozen=True, slots=True)
class Match:
    """A request placed on a route: ``resource`` is None when the request does not name it."""

    route: Route
    params: Mapping[str, str]
    resource: str | None

    @property
    def action(self) -> str:
        return self.route.action

    @property
    def effect(self) -> str:
        return self.route.effect


@dataclass
class _Node:
    literal: dict[str, _Node] = field(default_factory=dict)
    params: list[tuple[re.Pattern[str] | None, str, _Node]] = field(default_factory=list)
    rest: list[tuple[str, Route]] = field(default_factory=list)  # {name+}
    route: Route | None = None


def _segment(seg: str) -> tuple[str, re.Pattern[str] | None, str] | None:
    """``None`` for a literal; else (kind, regex for a mixed segment, name of a plain one)."""
    found = list(_PARAM.finditer(seg))
    if not found:
        return None
    if len(found) == 1 and found[0].group(0) == seg:
        return ("rest" if found[0].group(2) else "one"), None, found[0].group(1)
    pattern, last = "", 0
    for m in found:
        pattern += re.escape(seg[last : m.start()]) + f"(?P<{_group(m.group(1))}>[^/]+?)"
        last = m.end()
    pattern += re.escape(seg[last:])
    return "mixed", re.compile(pattern), ""


def _group(name: str) -> str:
    return name.replace(".", "__").replace("-", "_")


class RouteTable:
    """Routes indexed by method, then by path segment."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = tuple(routes)
        self._roots: dict[str, _Node] = {}
        for route in self.routes:
            self._add(route)

    def __len__(self) -> int:
        return len(self.routes)

    def _add(self, route: Route) -> None:
        node = self._roots.setdefault(route.method, _Node())
        segments = route.path.strip("/").split("/") if route.path.strip("/") else []
        for i, seg in enumerate(segments):
            kind = _segment(seg)
            if kind is None:
                node = node.literal.setdefault(seg, _Node())
            elif kind[0] == "rest":
                if i != len(segments) - 1:
                    raise ValueError(f"{route.path}: {{{kind[2]}+}} must be the last segment")
                node.rest.append((kind[2], route))
                return
            else:
                regex, name = kind[1], kind[2]
                for other_regex, other_name, child in node.params:
                    same = (other_regex.pattern if other_regex else other_name) == (
                        regex.pattern if regex else name
                    )
                    if same and (regex is not None or other_regex is None):
                        node = child
                        break
                else:
                    child = _Node()
                    node.params.append((regex, name, child))
                    # Mixed segments are more specific than a plain parameter: try them first.
                    node.params.sort(key=lambda p: p[0] is None)
                    node = child
        if node.route is None:
            node.route = route

    def match(self, request: Request) -> Match | None:
        """The route ``request`` takes, with its resource filled in; None when it takes none."""
        root = self._roots.get(request.method)
        if root is None:
            return None
        path = request.path.strip("/")
        segments = path.split("/") if path else []
        taken: list[tuple[str, str]] = []
        route = _walk(root, segments, 0, taken)
        if route is None:
            return None
        params = {}
        unresolved = False
        for name, raw in taken:
            value = unquote(raw) if "%" in raw else raw
            # A parameter that decodes into a path of its own (``%2F``, ``..``) names nothing.
            if escapes(value) or ("/" in value and "/" not in raw):
                unresolved = True
            params[name] = value
        if unresolved:
            return Match(route, params, None)
        return Match(route, params, fill(route.resource, params, request))


def _walk(node: _Node, segments: list[str], i: int, taken: list[tuple[str, str]]) -> Route | None:
    """Depth first, literal segments before parameters; ``taken`` holds the parameters of
    the path being tried (and of the match, once found)."""
    if i == len(segments):
        return node.route
    seg = segments[i]
    child = node.literal.get(seg)
    if child is not None:
        found = _walk(child, segments, i + 1, taken)
        if found is not None:
            return found
    if seg:
        for regex, name, child in node.params:
            mark = len(taken)
            if regex is None:
                taken.append((name, seg))
            else:
                m = regex.fullmatch(seg)
                if m is None:
                    continue
                taken.extend((k.replace("__", "."), v) for k, v in m.groupdict().items())
            found = _walk(child, segments, i + 1, taken)
            if found is not None:
                return found
            del taken[mark:]
    for name, route in node.rest:
        rest = "/".join(segments[i:])
        if rest:
            taken.append((name, rest))
            return route
    return None


_FIELD = lazy_pattern(r"\{([^{}]+)\}")


def fields(template: str) -> list[str]:
    """The ``{fields}`` a resource template names."""
    return _FIELD.findall(template)


def fill(template: str, params: Mapping[str, str], request: Request) -> str | None:
    """The resource ``template`` names for this request, or None when a field is missing."""
    parts = _compiled.get(template)
    if parts is None:
        parts = _compiled[template] = _compile(template)
    if not parts:
        return template
    out = []
    for source, key in parts:
        if source is None:
            out.append(key)
            continue
        if source == "query":
            got = request.query.get(key)
            value: Any = got[0] if got and len(set(got)) == 1 else None  # twice: which?
        elif source == "body":
            value = request.form.get(key)
        else:
            value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
            return None
        out.append(value if type(value) is str else str(value))
    return "".join(out)


def _compile(template: str) -> tuple[tuple[str | None, str], ...]:
    """``template`` as ``(source, key)`` parts: ``(None, literal text)``, or a field read from
    the path's parameters (``"path"``), the query (``"query"``) or the form body (``"body"``);
    empty when it names no field."""
    split = _FIELD.split(template)  # literal, field, literal, ...
    if len(split) == 1:
        return ()
    parts: list[tuple[str | None, str]] = []
    for i, part in enumerate(split):
        if not i % 2:
            if part:
                parts.append((None, part))
        elif part.startswith("query."):
            parts.append(("query", part[6:]))
        elif part.startswith("body."):
            parts.append(("body", part[5:]))
        else:
            parts.append(("path", part))
    return tuple(parts)


_compiled: dict[str, tuple[tuple[str | None, str], ...]] = {}


def load(package: str) -> RouteTable:
    """The route table ``routes.json`` (or ``routes.json.gz``) of the integration package
    ``package``; empty when it ships none."""
    import gzip
    from importlib import resources

    folder = resources.files(package)
    for suffix, opener in ((".json.gz", gzip.decompress), (".json", lambda b: b)):
        item = folder / f"routes{suffix}"
        if item.is_file():
            data = json.loads(opener(item.read_bytes()))
            return RouteTable(Route.row(r) for r in data["routes"])
    return RouteTable(())
