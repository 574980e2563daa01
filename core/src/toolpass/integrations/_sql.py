"""What a SQL text does, read with certainty or not at all: one conservative reader shared by
the Snowflake, Databricks and BigQuery integrations (dialect differences are parameters).

The text is cut into tokens (words, quoted names, strings, numbers, symbols), comments are
dropped, and statements are split at ``;``. Whatever the reader cannot tell with certainty
makes the whole text unreadable (None), which callers treat as a write of unknown reach: an
unterminated string or comment, a comment inside a comment, a line comment holding another
line break than a newline, a raw string or a quoted name holding a backslash, dollar-quoted
text, a character outside the dialect, a very long text.

A statement is a read only when it begins with SELECT, WITH, SHOW, DESCRIBE or DESC, holds no
word that writes, runs or changes the session (INSERT, INTO, CALL, EXECUTE, SET, ...), and
calls no function outside the dialect's plain list (a quoted, back-ticked or qualified
function name is never plain: it may be a user's function, or one that calls out). Its tables
are the names after FROM and JOIN and after a comma of a FROM list (a FROM inside a
function's parentheses, ``EXTRACT(YEAR FROM d)``, is no table), and inside parentheses opened
where a table is named (``JOIN (t)``, ``FROM (a JOIN b)``). A one-part name is left out only
where the statement's leading WITH defines it: after that CTE's body (within it under
RECURSIVE), compared as written (a quoted name exactly); a WITH inside a subquery leaves
nothing out. Writes name their tables after INTO, UPDATE, DELETE, MERGE, TABLE, VIEW, SCHEMA and
USING as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "BIGQUERY",
    "DATABRICKS",
    "SNOWFLAKE",
    "Dialect",
    "Statement",
    "reads_only",
    "statements",
]

_MAX = 100_000


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Functions that read their arguments and nothing else, in every dialect.
_COMMON = _words(
    """abs any_value array_agg avg between cast ceil ceiling coalesce concat count
    current_date current_timestamp date date_trunc day dense_rank first_value floor
    greatest hour if ifnull in lag last_value lead least left length lower ltrim max md5
    median min minute mod month now nullif nvl nvl2 percentile_cont position power
    rank regexp_replace replace right round row_number rtrim second sha1 sha2 sign split
    split_part sqrt stddev string_agg substr substring sum to_char to_date to_number
    to_timestamp to_varchar trim trunc try_cast upper variance week year"""
)
_STRUCTURAL = _words(
    """all and any as between by distinct else except exists from having in intersect is
    join like limit not offset on or over partition qualify select some then union using
    values when where with window"""
)
#: Words a read never holds: they write, run code, move data or change the session.
_WRITES = _words(
    """alter analyze begin call clone commit copy create declare delete drop execute exec
    export grant immediate import insert into list load merge msck nextval optimize put refresh
    remove rename restore revoke rollback set truncate undrop unload unset update upsert use
    vacuum"""
)
_READ_VERBS = frozenset({"select", "with", "show", "describe", "desc"})
_NOT_NAMES = _STRUCTURAL | _WRITES | frozenset({"lateral", "table", "unnest", "case", "null"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SYMBOLS = frozenset("(),.;*=<>!+-/%|:[]{}?^&~")
_PREFIXES = frozenset({"r", "b", "rb", "br"})
_BREAKS = re.compile("[\r\x0b\x0c\x85\u2028\u2029]")


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one system writes SQL."""

    name: str
    line_comments: tuple[str, ...] = ("--",)
    identifier_quotes: str = '"'  # quote characters of names ('"' Snowflake, '`' others)
    string_quotes: str = "'"
    triple_quotes: bool = False  # '''...''' and \"\"\"...\"\"\" strings (BigQuery)
    at_parameters: bool = False  # @name is a query parameter (BigQuery), not a stage
    dashed_names: bool = False  # a project id with dashes is one name part (BigQuery)
    dotted_quotes: bool = False  # `p.d.t` is three parts (BigQuery)
    functions: frozenset[str] = field(default_factory=frozenset)
    safe_prefix: bool = False  # SAFE.fn(...) is fn(...) that returns NULL on error (BigQuery)

    def plain(self, name: str) -> bool:
        return name.lower() in _COMMON or name.lower() in self.functions


SNOWFLAKE = Dialect(
    "snowflake",
    line_comments=("--", "//"),
    functions=_words("iff len dateadd datediff to_boolean to_double"),
)
DATABRICKS = Dialect(
    "databricks",
    identifier_quotes="`",
    string_quotes="'\"",
    functions=_words("date_add date_sub datediff to_timestamp"),
)
BIGQUERY = Dialect(
    "bigquery",
    line_comments=("--", "#"),
    identifier_quotes="`",
    string_quotes="'\"",
    triple_quotes=True,
    at_parameters=True,
    dashed_names=True,
    dotted_quotes=True,
    functions=_words(
        """array array_length countif date_add date_diff date_sub datetime extract format
        format_date format_timestamp generate_array generate_date_array ifnull
        json_extract_scalar json_value parse_date parse_timestamp regexp_contains
        regexp_extract safe_cast safe_divide starts_with ends_with struct timestamp
        timestamp_add timestamp_diff timestamp_sub timestamp_trunc unnest"""
    ),
    safe_prefix=True,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word, name (a quoted identifier), string, number, symbol
    text: str  # a word as written, a name or string unquoted
    start: int
    end: int

    def word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    def symbol(self, char: str) -> bool:
        return self.kind == "symbol" and self.text == char


def tokens(text: str, dialect: Dialect) -> list[Token] | None:
    """The text's tokens, comments dropped; None when it cannot be read with certainty."""
    if len(text) > _MAX:
        return None
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f":
            i += 1
        elif any(text.startswith(m, i) for m in dialect.line_comments):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if _BREAKS.search(text, i, end):
                return None  # a line a server may end before the newline
            i = end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0 or "/*" in text[i + 2 : end]:
                return None  # unterminated, or nested (dialects disagree on nesting)
            i = end + 2
        elif c in dialect.string_quotes or c in dialect.identifier_quotes:
            got = _quoted(text, i, dialect)
            if got is None:
                return None
            value, end = got
            kind = "name" if c in dialect.identifier_quotes else "string"
            before = out[-1] if out else None
            if (
                before is not None
                and before.end == i
                and before.word(*_PREFIXES)
                and "\\" in text[i:end]
            ):
                return None  # a raw or bytes string: its backslashes are read otherwise
            out.append(Token(kind, value, i, end))
            i = end
        elif m := _WORD.match(text, i):
            out.append(Token("word", m.group(0), i, m.end()))
            i = m.end()
        elif m := _NUMBER.match(text, i):
            out.append(Token("number", m.group(0), i, m.end()))
            i = m.end()
        elif c == "@" and dialect.at_parameters and (m := _WORD.match(text, i + 1)):
            out.append(Token("number", "@" + m.group(0), i, m.end()))  # a value, as a number
            i = m.end()
        elif c in _SYMBOLS:
            out.append(Token("symbol", c, i, i + 1))
            i += 1
        else:
            return None  # $, @, \, a character outside ASCII, ...
    return out


def _quoted(text: str, i: int, dialect: Dialect) -> tuple[str, int] | None:
    """A quoted string or name starting at ``i``: its value and where it ends; None when it
    does not end."""
    q = text[i]
    close = q * 3 if dialect.triple_quotes and text.startswith(q * 3, i) else q
    j, value = i + len(close), []
    name = q in dialect.identifier_quotes
    while j < len(text):
        c = text[j]
        if c == "\\" and name:
            return None  # dialects disagree on a backslash in a quoted name
        if c == "\\":
            if j + 1 >= len(text):
                return None
            value.append(text[j + 1])
            j += 2
        elif text.startswith(close, j):
            if len(close) == 1 and text.startswith(q, j + 1):  # a doubled quote
                value.append(q)
                j += 2
                continue
            return "".join(value), j + len(close)
        else:
            value.append(c)
            j += 1
    return None


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement: its verb, whether it is certainly a read, and the tables it names
    (name parts, unquoted)."""

    verb: str
    tokens: tuple[Token, ...]
    reads: bool
    tables: tuple[tuple[str, ...], ...]
    plain_calls: bool


def statements(text: object, dialect: Dialect) -> list[Statement] | None:
    """The statements of a SQL text; None when it cannot be read with certainty."""
    if not isinstance(text, str):
        return None
    found = tokens(text, dialect)
    if found is None:
        return None
    parts: list[list[Token]] = [[]]
    for t in found:
        if t.symbol(";"):
            parts.append([])
        else:
            parts[-1].append(t)
    out = []
    for part in parts:
        if not part:
            continue
        statement = _statement(part, dialect)
        if statement is None:
            return None
        out.append(statement)
    return out


def reads_only(text: object, dialect: Dialect) -> bool:
    """Whether a SQL text is certainly one or more reads and nothing else."""
    found = statements(text, dialect)
    return bool(found) and all(s.reads for s in found or ())


def _statement(toks: list[Token], dialect: Dialect) -> Statement | None:
    verb = toks[0].text.lower() if toks[0].kind == "word" else ""
    tables = _tables(toks, dialect)
    if tables is None:
        return None
    plain = calls_plain(toks, dialect)
    writes = any(t.kind == "word" and t.text.lower() in _WRITES for t in toks)
    reads = verb in _READ_VERBS and plain and not writes
    return Statement(verb, tuple(toks), reads, tables, plain)


def _call_at(toks: list[Token], i: int) -> bool:
    """Whether the token at ``i`` names a function called there."""
    t = toks[i]
    return (
        t.kind in ("word", "name")
        and i + 1 < len(toks)
        and toks[i + 1].symbol("(")
        and not (t.kind == "word" and t.text.lower() in _STRUCTURAL)
    )


def calls_plain(toks: list[Token], dialect: Dialect) -> bool:
    """Whether every function the tokens call is one of the dialect's plain functions, named
    bare (never quoted nor qualified)."""
    for i, t in enumerate(toks):
        if not _call_at(toks, i):
            continue
        qualified = i > 0 and toks[i - 1].symbol(".")
        if qualified and dialect.safe_prefix and i > 1 and toks[i - 2].word("safe"):
            qualified = i > 2 and toks[i - 3].symbol(".")
        if t.kind != "word" or qualified or not dialect.plain(t.text):
            return False
    return True


def _tables(toks: list[Token], dialect: Dialect) -> tuple[tuple[str, ...], ...] | None:
    """The table names a statement reads or writes; None when one cannot be read."""
    ctes = _ctes(toks)

    def visible(at: int) -> set[tuple[str, str]]:
        return {key for key, start in ctes if start <= at}

    def joined_on(at: int) -> bool:  # JOIN t USING (columns)
        return toks[at].word("using") and not toks[0].word("merge")

    found: list[tuple[str, ...]] = []
    calls: list[bool] = []  # per open parenthesis: whether a function call opened it
    nested: set[int] = set()  # parentheses opened where a table is named
    listing: list[bool] = [False]  # per depth: whether a FROM list is being read
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.symbol("("):
            calls.append(i > 0 and _call_at(toks, i - 1))
            listing.append(i in nested)  # FROM (a JOIN b), JOIN (t): tables inside
        elif t.symbol(")"):
            if not calls:
                return None
            calls.pop()
            listing.pop()
        if calls and calls[-1] and t.word("select"):
            calls[-1] = False  # ARRAY(SELECT ...): a subquery inside a call
        if calls and calls[-1]:
            i += 1
            continue
        starts = t.word("from", "join", "into", "update", "table", "view", "schema", "using")
        starts = starts or (t.symbol(",") and listing[-1]) or (i == 0 and t.word("merge"))
        starts = starts or (i == 0 and t.word("delete", "insert", "truncate")) or i in nested
        if t.word("from") and i > 0 and toks[i - 1].word("distinct"):
            starts = False  # IS DISTINCT FROM
        if t.word("from", "join"):
            listing[-1] = True
        elif t.kind == "word" and t.text.lower() in _STRUCTURAL - {"as", "on", "using"}:
            listing[-1] = False
        if starts:
            j = i + 1
            while j < len(toks) and toks[j].word("if", "not", "exists", "only", "from", "into"):
                j += 1
            got = _name(toks, j, dialect)
            if got is None:
                return None
            name, end = got
            if not name and j < len(toks) and toks[j].symbol("(") and not joined_on(i):
                nested.add(j)  # a table position opening a parenthesis: read inside it
            elif name and not (len(name) == 1 and _cte_key(toks[j]) in visible(j)):
                found.append(name)
            j = end
            i = max(j, i + 1)
            continue
        i += 1
    if calls:
        return None
    return tuple(found)


def _ctes(toks: list[Token]) -> list[tuple[tuple[str, str], int]]:
    """The names a statement's leading WITH defines, each with the index from which it names
    the CTE: after its body (inside it, and before it, the name is a table's), or from its
    body under RECURSIVE. A WITH nested in a subquery defines nothing here (its names are
    read as tables: more is checked, never less)."""
    if not toks or not toks[0].word("with"):
        return []
    recursive = len(toks) > 1 and toks[1].word("recursive")
    out, i = [], 2 if recursive else 1
    while i + 2 < len(toks) and toks[i + 1].word("as") and toks[i + 2].symbol("("):
        close = _closing(toks, i + 2)
        if close is None:
            break
        out.append((_cte_key(toks[i]), i + 2 if recursive else close))
        if close + 1 >= len(toks) or not toks[close + 1].symbol(","):
            break
        i = close + 2
    return out


def _cte_key(t: Token) -> tuple[str, str]:
    """How a name is compared with a CTE's: a word without case, a quoted name exactly."""
    return (t.kind, t.text.lower() if t.kind == "word" else t.text)


def _closing(toks: list[Token], i: int) -> int | None:
    """The index of the parenthesis that closes the one at ``i``."""
    depth = 0
    for k in range(i, len(toks)):
        depth += toks[k].symbol("(") - toks[k].symbol(")")
        if depth == 0:
            return k
    return None


def _name(toks: list[Token], i: int, dialect: Dialect) -> tuple[tuple[str, ...], int] | None:
    """The dotted name at ``i`` and the index after it: ``()`` when no name is there (a
    subquery, a function, the end); None when what follows a name cannot be read."""
    if i >= len(toks) or toks[i].kind not in ("word", "name") or _call_at(toks, i):
        return (), i
    if toks[i].kind == "word" and toks[i].text.lower() in _NOT_NAMES:
        return (), i
    parts: list[str] = []
    while True:
        got = _part(toks, i, dialect)
        if got is None:
            return None
        part, i = got
        parts.extend(part)
        if i + 1 < len(toks) and toks[i].symbol(".") and toks[i + 1].kind in ("word", "name"):
            i += 1
            continue
        break
    if i < len(toks) and toks[i].kind == "symbol" and toks[i].text not in ",)(":
        return None  # ds.t-x, t:x, t@v, t*: not a name this reader can be sure of
    if i < len(toks) and toks[i].kind in ("string", "number"):
        return None
    if any(not p for p in parts):
        return None
    return tuple(parts), i


def _part(toks: list[Token], i: int, dialect: Dialect) -> tuple[list[str], int] | None:
    t = toks[i]
    if t.kind == "name":
        return (t.text.split(".") if dialect.dotted_quotes else [t.text]), i + 1
    text, end, i = t.text, t.end, i + 1
    while (  # my-project-2: one part, written without spaces
        dialect.dashed_names
        and i + 1 < len(toks)
        and toks[i].symbol("-")
        and toks[i].start == end
        and toks[i + 1].kind in ("word", "number")
        and toks[i + 1].start == end + 1
    ):
        text, end, i = f"{text}-{toks[i + 1].text}", toks[i + 1].end, i + 2
    return [text], i
