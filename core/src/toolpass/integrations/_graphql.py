"""GraphQL requests read the one way every GraphQL integration reads them (GitHub, Linear).

:func:`operation` reads a request's body (``query``, ``operationName``, ``variables``) and
parses its document: operations, fields with their arguments and nested selections,
fragments, aliases (a field is known by its name, never its alias), variables and
directives. A selection is a field ``(name, arguments, selections or None)``, a fragment
spread ``("...", name)`` or an inline fragment ``("...", selections)``; :class:`Fields`
expands the fragments, within a budget of fields, and :func:`resolve` fills in the
variables. What each field means is the integration's business.

The parser follows the GraphQL specification's lexical grammar (October 2021) closely
enough to read operations, fields, arguments and fragments; a document it cannot read is
:class:`Unreadable` (its callers answer None: a refused write), never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from toolpass.integrations.routes import Request

__all__ = ["Field", "Fields", "Operation", "Unreadable", "operation", "resolve"]

MAX_FIELDS = 5000  # fragments spread into each other may multiply a small document

_TOKEN = re.compile(
    r"""
    (?P<ignored>[\s,\ufeff]+|\#[^\n\r]*)
    |(?P<block>\"\"\"(?:\\\"\"\"|[^"]|"(?!""))*\"\"\")
    |(?P<string>"(?:[^"\\\n\r]|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*")
    |(?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![_A-Za-z0-9.]))
    |(?P<name>[_A-Za-z][_0-9A-Za-z]*)
    |(?P<punct>\.\.\.|[!$&():=@\[\]{|}])
    """,
    re.VERBOSE,
)


class Unreadable(Exception):
    """The document is not one this parser reads (or expands to too many fields)."""


class _Var:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise Unreadable(f"unexpected character at {pos}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind != "ignored":
            out.append((kind, m.group()))
    return out


Field = tuple[str, dict[str, Any], list[Any] | None]  # name, arguments, selections


class _Parser:
    """Operations and fragments: fields with their arguments and nested selections. A
    selection is a field ``(name, arguments, selections or None)``, a fragment spread
    ``("...", name)`` or an inline fragment ``("...", selections)``."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "")

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        tok_kind, tok = self.peek()
        if (value is not None and tok != value) or (kind is not None and tok_kind != kind):
            raise Unreadable(f"expected {value or kind}, found {tok!r}")
        if tok_kind == "eof":
            raise Unreadable("unexpected end")
        self.i += 1
        return tok

    def document(self) -> tuple[list[tuple[str, str | None, list[Any]]], dict[str, list[Any]]]:
        """([(operation type, name, selections)], {fragment name: selections})."""
        ops: list[tuple[str, str | None, list[Any]]] = []
        fragments: dict[str, list[Any]] = {}
        while self.peek()[0] != "eof":
            kind, tok = self.peek()
            if tok == "{":
                ops.append(("query", None, self.selections()))
            elif kind == "name" and tok in ("query", "mutation", "subscription"):
                self.take()
                name = self.take(kind="name") if self.peek()[0] == "name" else None
                if self.peek()[1] == "(":
                    self.variable_definitions()
                self.directives()
                ops.append((tok, name, self.selections()))
            elif kind == "name" and tok == "fragment":
                self.take()
                name = self.take(kind="name")
                self.take("on")
                self.take(kind="name")
                self.directives()
                if name in fragments:
                    raise Unreadable(f"fragment {name} defined twice")
                fragments[name] = self.selections()
            else:
                raise Unreadable(f"unexpected {tok!r}")
        return ops, fragments

    def variable_definitions(self) -> None:
        self.take("(")
        while self.peek()[1] != ")":
            self.take("$")
            self.take(kind="name")
            self.take(":")
            self.type_ref()
            if self.peek()[1] == "=":
                self.take()
                self.value()
            self.directives()
        self.take(")")

    def type_ref(self) -> None:
        if self.peek()[1] == "[":
            self.take()
            self.type_ref()
            self.take("]")
        else:
            self.take(kind="name")
        if self.peek()[1] == "!":
            self.take()

    def directives(self) -> None:
        while self.peek()[1] == "@":
            self.take()
            self.take(kind="name")
            if self.peek()[1] == "(":
                self.arguments()

    def selections(self) -> list[Any]:
        self.take("{")
        out: list[Any] = []
        while self.peek()[1] != "}":
            if self.peek()[1] == "...":
                self.take()
                if self.peek()[1] == "on":
                    self.take()
                    self.take(kind="name")
                    self.directives()
                    out.append(("...", self.selections()))
                elif self.peek()[1] in ("@", "{"):
                    self.directives()
                    out.append(("...", self.selections()))
                else:
                    out.append(("...", self.take(kind="name")))
                    self.directives()
                continue
            name = self.take(kind="name")
            if self.peek()[1] == ":":  # an alias
                self.take()
                name = self.take(kind="name")
            args = self.arguments() if self.peek()[1] == "(" else {}
            self.directives()
            out.append((name, args, self.selections() if self.peek()[1] == "{" else None))
        self.take("}")
        if not out:
            raise Unreadable("empty selection set")
        return out

    def arguments(self) -> dict[str, Any]:
        self.take("(")
        args: dict[str, Any] = {}
        while self.peek()[1] != ")":
            name = self.take(kind="name")
            self.take(":")
            if name in args:
                raise Unreadable(f"argument {name} given twice")
            args[name] = self.value()
        self.take(")")
        return args

    def value(self) -> Any:
        kind, tok = self.peek()
        if tok == "$":
            self.take()
            return _Var(self.take(kind="name"))
        if tok == "[":
            self.take()
            items = []
            while self.peek()[1] != "]":
                items.append(self.value())
            self.take("]")
            return items
        if tok == "{":
            self.take()
            obj: dict[str, Any] = {}
            while self.peek()[1] != "}":
                key = self.take(kind="name")
                self.take(":")
                obj[key] = self.value()
            self.take("}")
            return obj
        self.take()
        if kind == "string":
            return json.loads(tok)
        if kind == "block":
            return tok[3:-3].replace('\\"""', '"""')
        if kind == "number":
            return json.loads(tok)
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(tok, tok)
        raise Unreadable(f"unexpected {tok!r} in a value")


def resolve(value: Any, variables: Mapping[str, Any]) -> Any:
    """An argument's value with its variables replaced by their values (absent: None)."""
    if isinstance(value, _Var):
        return variables.get(value.name)
    if isinstance(value, list):
        return [resolve(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, variables) for k, v in value.items()}
    return value


def _body(request: Request) -> tuple[str, str | None, dict[str, Any]] | None:
    form = request.form
    query, name, variables = form.get("query"), form.get("operationName"), form.get("variables")
    if isinstance(variables, str):
        try:
            variables = json.loads(variables) if variables.strip() else {}
        except ValueError:
            return None
    if variables is None:
        variables = {}
    if not isinstance(query, str) or not isinstance(variables, dict):
        return None
    if name is not None and not isinstance(name, str):
        return None
    return query, name or None, variables


class Fields:
    """The fields of selection sets, their fragments expanded: at most ``MAX_FIELDS`` for
    one document, and a fragment that is unknown or spreads itself is :class:`Unreadable`."""

    def __init__(self, fragments: Mapping[str, list[Any]]) -> None:
        self.fragments = fragments
        self.budget = MAX_FIELDS

    def fields(self, selections: list[Any], seen: tuple[str, ...] = ()) -> list[Field]:
        """The fields of a selection set, its fragments expanded."""
        out: list[Field] = []
        for selection in selections:
            if selection[0] != "...":
                out.append(selection)
                self.budget -= 1
            elif isinstance(selection[1], list):
                out.extend(self.fields(selection[1], seen))
            elif selection[1] in seen or selection[1] not in self.fragments:
                raise Unreadable(f"fragment {selection[1]} is unknown or spreads itself")
            else:
                out.extend(self.fields(self.fragments[selection[1]], (*seen, selection[1])))
        if self.budget < 0:
            raise Unreadable("too many fields")
        return out


class Operation(NamedTuple):
    """The one operation a GraphQL request runs."""

    kind: str  # query, mutation, subscription
    roots: list[Any]  # its root selections
    fragments: dict[str, list[Any]]  # the document's fragments, by name
    variables: Mapping[str, Any]


def operation(request: Request) -> Operation | None:
    """The one operation a GraphQL request runs; None when the body cannot be read or does
    not name exactly one operation."""
    found = _body(request)
    if found is None:
        return None
    query, op_name, variables = found
    try:
        ops, fragments = _Parser(query).document()
    except (Unreadable, ValueError, RecursionError):
        return None
    chosen = [op for op in ops if op_name is None or op[1] == op_name]
    if len(chosen) != 1:
        return None
    kind, _, roots = chosen[0]
    return Operation(kind, roots, fragments, variables)
