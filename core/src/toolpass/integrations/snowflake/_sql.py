"""What one Snowflake SQL API statement (``POST /api/v2/statements``) does, when its text says
it plainly; otherwise nothing (it stays ``account.admin`` on the account).

A small, conservative classifier, not a SQL parser, on top of the shared reader
(:mod:`toolpass.integrations._sql`: statements, strings, quoted names, function calls). It
names one action on one object, and only for one statement of these shapes, the object
named in full (``DB.SCHEMA.TABLE``, unquoted or double-quoted parts):

- ``SELECT <columns> FROM <table> [[AS] alias] [WHERE|GROUP BY|HAVING|QUALIFY|ORDER BY|LIMIT
  ...]``: ``table.read``;
- ``DESCRIBE|DESC TABLE|VIEW <table>``: ``table.read``;
- ``SHOW [TERSE] <objects> [LIKE '...'] IN SCHEMA <db.schema>``: ``schema.use``;
  ``SHOW [TERSE] SCHEMAS [LIKE '...'] IN DATABASE <db>``: ``database.use``;
- ``INSERT INTO <table> [(columns)] VALUES (...)``: ``table.insert``;
- ``UPDATE <table> [alias] SET ... [WHERE ...]``: ``table.update``;
- ``DELETE FROM <table> [WHERE ...]``: ``table.delete``;
- ``TRUNCATE [TABLE] [IF EXISTS] <table>``: ``table.truncate``.

What it does not parse, and so leaves to ``account.admin``: a second statement (any ``;``
but a last one), comments (``--``, ``//``, ``/* */``), dollar-quoted text, a name not given
in full (the request's ``database``/``schema`` fields or the user's default namespace would
complete it), joins, subqueries, set operations, CTEs, ``TABLE(...)``/``IDENTIFIER(...)``,
stages (``@``), time travel beyond plain clauses, ``INSERT ... SELECT``, ``UPDATE ... FROM``,
``DELETE ... USING``, MERGE, COPY, CALL, DDL, GRANT/REVOKE, session commands, and any
function outside a short list of plain scalar and aggregate functions (a function may call
out: external functions, ``SYSTEM$...``, Cortex; a quoted or qualified name, ``"FN"(...)``,
is never one of them), a sequence's NEXTVAL (it advances the sequence). The warehouse a
statement runs on is not checked by this route (``warehouse.use`` is its own action).
"""

from __future__ import annotations

import re

from toolpass.integrations._sql import SNOWFLAKE, calls_plain, statements, tokens
from toolpass.integrations.routes import Match, Route

_PART = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_T3 = rf"(?P<obj>{_PART}\.{_PART}\.{_PART})"
_T2 = rf"(?P<obj>{_PART}\.{_PART})"
_T1 = rf"(?P<obj>{_PART})"
_END = r"\s*;?\s*"
_TAIL = r"(?:\s+(?P<tail>(?:WHERE|GROUP\s+BY|HAVING|QUALIFY|ORDER\s+BY|LIMIT)\b.*?))?"
_ALIAS = r"(?:\s+(?:AS\s+)?(?!(?:WHERE|GROUP|HAVING|QUALIFY|ORDER|LIMIT|SET)\b)[A-Za-z_]\w*)?"
_LIKE = r"(?:\s+LIKE\s+'[^'\\]*')?"
_SHAPES: list[tuple[str, str, str, re.Pattern[str]]] = [
    (
        "table.read",
        "table",
        "read",
        re.compile(rf"\s*SELECT\s+(?P<cols>.+?)\s+FROM\s+{_T3}{_ALIAS}{_TAIL}{_END}", re.I | re.S),
    ),
    (
        "table.read",
        "table",
        "read",
        re.compile(rf"\s*DESC(?:RIBE)?\s+(?:TABLE|VIEW)\s+{_T3}{_END}", re.I),
    ),
    (
        "schema.use",
        "schema",
        "read",
        re.compile(
            rf"\s*SHOW\s+(?:TERSE\s+)?(?:TABLES|VIEWS|OBJECTS|DYNAMIC\s+TABLES|"
            rf"MATERIALIZED\s+VIEWS|SEQUENCES|STAGES|FUNCTIONS|PROCEDURES){_LIKE}\s+IN\s+"
            rf"SCHEMA\s+{_T2}{_END}",
            re.I,
        ),
    ),
    (
        "database.use",
        "database",
        "read",
        re.compile(rf"\s*SHOW\s+(?:TERSE\s+)?SCHEMAS{_LIKE}\s+IN\s+DATABASE\s+{_T1}{_END}", re.I),
    ),
    (
        "table.insert",
        "table",
        "write",
        re.compile(
            rf"\s*INSERT\s+INTO\s+{_T3}\s*(?:\((?P<cols>[^()]*)\)\s*)?VALUES\s*(?P<tail>\(.*\)){_END}",
            re.I | re.S,
        ),
    ),
    (
        "table.update",
        "table",
        "write",
        re.compile(rf"\s*UPDATE\s+{_T3}{_ALIAS}\s+SET\s+(?P<tail>.+?){_END}", re.I | re.S),
    ),
    (
        "table.delete",
        "table",
        "destructive",
        re.compile(
            rf"\s*DELETE\s+FROM\s+{_T3}{_ALIAS}(?:\s+(?P<tail>WHERE\b.+?))?{_END}", re.I | re.S
        ),
    ),
    (
        "table.truncate",
        "table",
        "destructive",
        re.compile(rf"\s*TRUNCATE\s+(?:TABLE\s+)?(?:IF\s+EXISTS\s+)?{_T3}{_END}", re.I),
    ),
]
_NOT_PLAIN = re.compile(
    r"--|//|/\*|\$\$|@|\b(?:FROM|JOIN|UNION|INTERSECT|EXCEPT|MINUS|WITH|SELECT|INTO|LATERAL|"
    r"TABLE|IDENTIFIER|USING|CONNECT|MATCH_RECOGNIZE|PIVOT|UNPIVOT|CHANGES|RESULT_SCAN|NEXTVAL)\b",
    re.I,
)


def plain(statement: object) -> tuple[str, str, str, str] | None:
    """``(action, kind, effect, object)`` for one statement of a shape this module reads,
    else None."""
    found = statements(statement, SNOWFLAKE)
    if found is None or len(found) != 1 or not isinstance(statement, str):
        return None  # unreadable, or a second statement
    if re.search(r"--|//|/\*", statement):
        return None  # a comment: the shapes below read the text as it is
    for action, kind, effect, pattern in _SHAPES:
        m = pattern.fullmatch(statement)
        if m is None:
            continue
        groups = m.groupdict()
        rest = f"{groups.get('cols') or ''} | {groups.get('tail') or ''}"
        if _NOT_PLAIN.search(rest):
            return None
        toks = tokens(rest, SNOWFLAKE)
        if toks is None or not calls_plain(toks, SNOWFLAKE):
            return None  # a function outside the plain ones, or one quoted or qualified
        return action, kind, effect, m.group("obj")
    return None


def classify(found: Match, statement: object) -> Match:
    """``found`` (the statements route) narrowed to what ``statement`` plainly does."""
    got = plain(statement)
    if got is None:
        return found
    action, kind, effect, obj = got
    route = found.route
    narrowed = Route(
        route.method,
        route.path,
        action,
        f"{kind}:{{body.statement}}",
        effect,
        route.untrusted,
        route.sends_out,
        False,
    )
    return Match(narrowed, found.params, f"{kind}:{obj}")
