"""The shared SQL reader (``integrations/_sql.py``): a write is never read as a read, in any of
its dialects, whatever strings, comments and whitespace surround it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass.integrations._sql import BIGQUERY, DATABRICKS, SNOWFLAKE, Dialect, reads_only
from toolpass.integrations._sql import statements as read

DIALECTS = (SNOWFLAKE, DATABRICKS, BIGQUERY)
READS = (
    "SELECT 1",
    "SELECT a, count(*) FROM db.s.t WHERE b = 'x' GROUP BY a",
    "WITH x AS (SELECT a FROM db.s.t) SELECT * FROM x",
    "select lower(a) from db.s.t order by 1 limit 5",
)
WRITES = (
    "DROP TABLE db.s.t",
    "delete from db.s.t",
    "INSERT INTO db.s.t VALUES (1)",
    "UPDATE db.s.t SET a = 1",
    "MERGE INTO db.s.t USING db.s.u ON true WHEN MATCHED THEN DELETE",
    "TRUNCATE TABLE db.s.t",
    "CREATE TABLE db.s.u AS SELECT * FROM db.s.t",
    "EXPORT DATA OPTIONS (uri = 'gs://b/*') AS SELECT 1",
    "GRANT SELECT ON db.s.t TO ROLE r",
    "CALL db.s.p()",
    "SET x = 1",
    "SELECT a INTO x FROM db.s.t",
    "COPY INTO db.s.t FROM 's3://b/k'",
    "EXECUTE IMMEDIATE 'DROP TABLE db.s.t'",
    "SELECT db.s.seq.nextval FROM db.s.t",  # advances the sequence
)
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def _line_comment(dialect: Dialect) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(dialect.line_comments), _TEXT).map(
        lambda p: p[0] + re.sub("[\r\n\x0b\x0c\x85\u2028\u2029]", " ", p[1]) + "\n"
    )


def _block_comment() -> st.SearchStrategy[str]:
    return _TEXT.filter(lambda t: "*/" not in t and "/*" not in t).map(lambda t: f"/*{t}*/")


def _gap(dialect: Dialect) -> st.SearchStrategy[str]:
    """Whitespace and comments, in any order."""
    piece = st.one_of(
        st.sampled_from([" ", "\n", "\t", "\r\n"]), _line_comment(dialect), _block_comment()
    )
    return st.lists(piece, max_size=4).map("".join)


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_write_after_a_read_is_never_a_read(data: st.DataObject) -> None:
    dialect = data.draw(st.sampled_from(DIALECTS))
    before, after = data.draw(_gap(dialect)), data.draw(_gap(dialect))
    text = (
        data.draw(st.sampled_from(READS))
        + before
        + ";"
        + after
        + data.draw(st.sampled_from(WRITES))
        + data.draw(st.sampled_from(["", ";", "; ", ";\n"]))
    )
    assert not reads_only(text, dialect), text


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_strings_and_comments_never_hide_a_table_nor_make_a_write(data: st.DataObject) -> None:
    dialect = data.draw(st.sampled_from(DIALECTS))
    literal = _quoted(data.draw(_TEXT))
    gap = data.draw(_gap(dialect))
    text = f"SELECT {literal} AS x{gap} FROM db.s.t{gap} WHERE a = {literal}"
    found = read(text, dialect)
    assert found is not None, text
    [statement] = found
    assert statement.reads, text
    assert statement.tables == (("db", "s", "t"),), text


@settings(max_examples=500, deadline=None)
@given(text=_TEXT, dialect=st.sampled_from(DIALECTS))
def test_any_text_is_read_or_refused_without_error(text: str, dialect: Dialect) -> None:
    found = read(text, dialect)
    assert found is None or all(isinstance(s.reads, bool) for s in found)


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        ("SELECT 1 /* a /* b */ */", SNOWFLAKE),  # nested comments: dialects disagree
        ("SELECT 1 /* unterminated", BIGQUERY),
        ("SELECT 'unterminated", DATABRICKS),
        ("SELECT $$DROP TABLE t$$", SNOWFLAKE),
        ("SELECT r'\\' ; DROP TABLE t; --'", BIGQUERY),  # a raw string's backslash
        ("SELECT * FROM @stage", SNOWFLAKE),
        ("SELECT * FROM t\\\\", DATABRICKS),
        ("SELECT 1 -- x\r; DROP TABLE t", SNOWFLAKE),  # a carriage return may end the line
        ("SELECT `a\\`, 1 FROM a.b.c; DROP TABLE x; -- `", DATABRICKS),
    ],
)
def test_what_cannot_be_read_with_certainty_is_no_statement(text: str, dialect: Dialect) -> None:
    assert read(text, dialect) is None
    assert not reads_only(text, dialect)


@pytest.mark.parametrize(
    ("text", "dialect", "tables"),
    [
        ("SELECT EXTRACT(YEAR FROM d) FROM ds.t", BIGQUERY, [("ds", "t")]),
        (
            "SELECT ARRAY(SELECT x FROM ds.secret) FROM ds.t",
            BIGQUERY,
            [("ds", "secret"), ("ds", "t")],
        ),
        (
            "SELECT * FROM `p-1.ds.t` a, my-proj.ds.u",
            BIGQUERY,
            [("p-1", "ds", "t"), ("my-proj", "ds", "u")],
        ),
        ("SELECT * FROM a.b.c WHERE x IS DISTINCT FROM y", DATABRICKS, [("a", "b", "c")]),
        ('SELECT * FROM "A"."b.c".T', SNOWFLAKE, [("A", "b.c", "T")]),
        (
            "WITH x AS (SELECT * FROM a.b.c) SELECT * FROM x JOIN a.b.d ON true",
            DATABRICKS,
            [("a", "b", "c"), ("a", "b", "d")],
        ),
    ],
)
def test_the_tables_a_read_names(
    text: str, dialect: Dialect, tables: list[tuple[str, ...]]
) -> None:
    [statement] = read(text, dialect) or []
    assert statement.reads
    assert sorted(statement.tables) == sorted(tables)


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        ('SELECT "FN"(a) FROM db.s.t', SNOWFLAKE),
        ("SELECT `http_request`('u') FROM a.b.c", DATABRICKS),
        ("SELECT ds.remote_fn(a) FROM ds.t", BIGQUERY),
        ("SELECT EXTERNAL_QUERY('c', 'SELECT 1')", BIGQUERY),
        ("SELECT system$send_email('i', 'a', 's', 'b')", SNOWFLAKE),
    ],
)
def test_a_function_that_is_not_plain_is_no_read(text: str, dialect: Dialect) -> None:
    assert not reads_only(text, dialect)


_FROMS = (  # {0}: the other table; {1}: where the secret one goes
    "SELECT * FROM {0} x JOIN {1} ON true",
    "SELECT * FROM {0} x, {1}",
    "SELECT * FROM {1}, {0}",
    "SELECT * FROM {0} x LEFT JOIN {1} y ON x.a = y.a",
    "SELECT * FROM ({0} x JOIN {1} y ON true)",
    "SELECT * FROM {0} WHERE a IN (SELECT a FROM {1})",
)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    shape=st.sampled_from(_FROMS),
    depth=st.integers(0, 4),
    dialect=st.sampled_from(DIALECTS),
)
def test_a_table_in_parentheses_is_still_a_table(
    data: st.DataObject, shape: str, depth: int, dialect: Dialect
) -> None:
    gap = data.draw(_gap(dialect))
    secret = "(" * depth + gap + "db.s.secret" + gap + ")" * depth
    text = shape.format("db.s.t", secret)
    [statement] = read(text, dialect) or []
    assert ("db", "s", "secret") in statement.tables, text
    assert ("db", "s", "t") in statement.tables, text


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        # a CTE defined inside a subquery names nothing outside it
        ("SELECT * FROM (WITH pay AS (SELECT 1) SELECT * FROM pay) x, pay", DATABRICKS),
        ("SELECT * FROM pay WHERE a IN (WITH pay AS (SELECT 1) SELECT * FROM pay)", BIGQUERY),
        # inside its own body, or before it is defined, the name is a table's
        ("WITH pay AS (SELECT * FROM pay) SELECT * FROM pay", DATABRICKS),
        ("WITH a AS (SELECT * FROM pay), pay AS (SELECT 1) SELECT * FROM a", BIGQUERY),
        # a quoted CTE name is another name than the unquoted one (Snowflake folds case)
        ('WITH "pay" AS (SELECT 1) SELECT * FROM pay', SNOWFLAKE),
    ],
)
def test_a_name_no_cte_covers_is_a_table(text: str, dialect: Dialect) -> None:
    [statement] = read(text, dialect) or []
    assert ("pay",) in statement.tables or ("PAY",) in statement.tables, text


def test_a_cte_in_scope_is_no_table() -> None:
    [statement] = read("WITH pay AS (SELECT 1) SELECT * FROM pay, (pay) p", DATABRICKS) or []
    assert statement.tables == ()
