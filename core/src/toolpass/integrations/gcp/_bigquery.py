"""BigQuery jobs placed by what they do, not by the project that pays for them.

``jobs.query`` (``POST .../projects/{p}/queries``) and ``jobs.insert`` (``POST
.../projects/{p}/jobs``) need ``bigquery.jobs.create`` on the billing project, and then what
the job touches: :func:`plan` reads the body into ``(effect, checks, sends_out)``, each check
an IAM permission on a full resource name:

- a query's SQL, read by :mod:`toolpass.integrations._sql` (GoogleSQL only: ``useLegacySql``
  must be ``false``): every table a SELECT names, ``bigquery.tables.getData`` on it (a
  wildcard table on its dataset), in any project; an INSERT, UPDATE, DELETE, MERGE or
  TRUNCATE ``bigquery.tables.updateData`` on the target's dataset; CREATE, ALTER, DROP of a
  table or view ``bigquery.tables.create|update|delete`` on its dataset, of a schema
  ``bigquery.datasets.create`` (on the project) or ``update|delete``; EXPORT DATA
  ``bigquery.tables.export`` on what it reads, and it sends data out; a destination table
  ``bigquery.tables.updateData`` and ``create`` on its dataset;
- a load job: ``storage.objects.get`` on each ``gs://`` bucket and the destination as above;
  an extract job: ``bigquery.tables.export`` on its table and ``storage.objects.create`` on
  each bucket it writes (it sends data out); a copy job: ``getData`` on its sources and the
  destination as above.

Anything else is None, and the request names no resource (refused): legacy SQL, a statement
the SQL reader cannot read with certainty, scripting (DECLARE, SET, IF, EXECUTE IMMEDIATE,
CALL), CREATE ... CLONE/COPY/LIKE, external tables and inline table definitions, a name that
needs a default dataset the request does not give, a name not given in full in a query that
joins a session (``connectionProperties``: the session's ``@@dataset_id`` and
``@@dataset_project_id`` place it), INFORMATION_SCHEMA, a field of the body this module does
not know.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations._sql import BIGQUERY, Statement, statements

__all__ = ["Check", "plan"]

Check = tuple[str, str]  # (IAM permission, full resource name)
_Plan = tuple[str, list[Check], bool]
_PROJECT = re.compile(r"(?:[a-z][a-z0-9.-]{0,62}:)?[a-z][a-z0-9-]{4,61}[a-z0-9]")
_DATASET = re.compile(r"[A-Za-z0-9_]{1,1024}")
_TABLE = re.compile(r"[\w$-]{1,1024}\*?")
_BUCKET = re.compile(r"gs://([a-z0-9][a-z0-9._-]{1,221})/.*", re.S)
_RANK = {"read": 0, "write": 1, "destructive": 2}
_COMMON = frozenset(
    {
        "query",
        "useLegacySql",
        "defaultDataset",
        "dryRun",
        "useQueryCache",
        "queryParameters",
        "parameterMode",
        "labels",
        "maximumBytesBilled",
        "connectionProperties",
        "createSession",
        "jobTimeoutMs",
        "destinationEncryptionConfiguration",
        "priority",
    }
)
_QUERY_REQUEST = _COMMON | {
    "kind",
    "maxResults",
    "timeoutMs",
    "location",
    "requestId",
    "formatOptions",
    "jobCreationMode",
    "preserveNulls",
}
_QUERY_JOB = _COMMON | {
    "destinationTable",
    "writeDisposition",
    "createDisposition",
    "allowLargeResults",
    "flattenResults",
    "schemaUpdateOptions",
    "timePartitioning",
    "rangePartitioning",
    "clustering",
    "scriptOptions",
}
_JOB = frozenset({"query", "load", "extract", "copy", "dryRun", "labels", "jobTimeoutMs"})
_DML = {"insert": "write", "update": "write", "merge": "write", "delete": "destructive"}
_DDL = {"create": "create", "alter": "update", "drop": "delete"}
_DDL_SKIPPED = frozenset({"or", "replace", "temp", "temporary", "materialized"})


def plan(project: str, jobs_query: bool, body: Mapping[str, Any]) -> _Plan | None:
    """What a ``jobs.query`` (``jobs_query``) or ``jobs.insert`` body does in ``project``;
    None when it cannot be told."""
    if not _PROJECT.fullmatch(project):
        return None
    if jobs_query:
        return _query(project, body, _QUERY_REQUEST)
    if not set(body) <= {"kind", "jobReference", "configuration"}:
        return None
    ref, config = body.get("jobReference", {}), body.get("configuration")
    if not isinstance(ref, dict) or ref.get("projectId", project) != project:
        return None
    if not isinstance(config, dict) or not set(config) <= _JOB:
        return None
    kinds = [k for k in ("query", "load", "extract", "copy") if k in config]
    if len(kinds) != 1 or not isinstance(config[kinds[0]], dict):
        return None
    kind, job = kinds[0], config[kinds[0]]
    if kind == "query":
        return _query(project, job, _QUERY_JOB)
    return {"load": _load, "extract": _extract, "copy": _copy}[kind](project, job)


def _query(project: str, body: Mapping[str, Any], known: frozenset[str]) -> _Plan | None:
    if not set(body) <= known or body.get("useLegacySql") is not False:
        return None
    default = body.get("defaultDataset")
    if default is not None and not (
        isinstance(default, dict) and isinstance(default.get("datasetId"), str)
    ):
        return None
    home = (str(default.get("projectId", project)), str(default["datasetId"])) if default else None
    found = statements(body.get("query"), BIGQUERY)
    if not found:
        return None
    effect, checks, sends = "read", [], False
    for statement in found:
        if _in_session(body) and any(len(name) < 3 for name in statement.tables):
            return None  # the session's @@dataset_id, @@dataset_project_id may place it
        one = _statement(statement, project, home)
        if one is None:
            return None
        effect = max(effect, one[0], key=_RANK.__getitem__)
        checks += one[1]
        sends = sends or one[2]
    if "destinationTable" in body:
        dest = _destination(project, body)
        if dest is None:
            return None
        effect = max(effect, dest[0], key=_RANK.__getitem__)
        checks += dest[1]
    return effect, checks, sends


def _in_session(body: Mapping[str, Any]) -> bool:
    """Whether the query runs in an existing session (``connectionProperties`` may name one,
    and any property may change how names resolve)."""
    return bool(body.get("connectionProperties"))


def _statement(statement: Statement, project: str, home: tuple[str, str] | None) -> _Plan | None:
    names = [_named(n, project, home) for n in statement.tables]
    if any(n is None for n in names):
        return None
    tables = [n for n in names if n is not None]
    reads = [("bigquery.tables.getData", _resource(*t)) for t in tables]
    verb, words = statement.verb, [t.text.lower() for t in statement.tokens if t.kind == "word"]
    if statement.reads and verb in ("select", "with"):
        return "read", reads, False
    if verb == "export" and words[:2] == ["export", "data"]:
        return "write", [("bigquery.tables.export", _resource(*t)) for t in tables], True
    if verb in _DML or (verb == "truncate" and words[1:2] == ["table"]):
        if not tables:
            return None
        effect = _DML.get(verb, "destructive")
        return (
            effect,
            [("bigquery.tables.updateData", _resource(*tables[0][:2])), *reads[1:]],
            False,
        )
    if verb in _DDL and not {"clone", "copy", "like", "external", "snapshot"} & set(words):
        kinds = [w for w in words[1:] if w not in _DDL_SKIPPED]
        if not kinds or kinds[0] not in ("table", "view", "schema") or not statement.tables:
            return None
        effect = "destructive" if verb == "drop" else "write"
        if kinds[0] == "schema":
            return _schema(verb, statement.tables[0], project, effect)
        if not tables:
            return None
        permission = f"bigquery.tables.{_DDL[verb]}"
        return effect, [(permission, _resource(*tables[0][:2])), *reads[1:]], False
    return None


def _schema(verb: str, name: tuple[str, ...], project: str, effect: str) -> _Plan | None:
    parts = (project, *name) if len(name) == 1 else name
    if len(parts) != 2 or not _PROJECT.fullmatch(parts[0]) or not _DATASET.fullmatch(parts[1]):
        return None
    if verb == "create":
        on = f"//cloudresourcemanager.googleapis.com/projects/{parts[0]}"
        return effect, [("bigquery.datasets.create", on)], False
    return effect, [(f"bigquery.datasets.{_DDL[verb]}", _resource(*parts))], False


def _named(
    name: tuple[str, ...], project: str, home: tuple[str, str] | None
) -> tuple[str, str, str] | None:
    """``(project, dataset, table)`` of a name in a query; None when it cannot be placed."""
    if any(p.upper() == "INFORMATION_SCHEMA" for p in name):
        return None
    if len(name) == 1 and home is not None:
        name = (*home, *name)
    elif len(name) == 2:  # defaultDataset "does not alter behavior of unqualified dataset names"
        name = (project, *name)
    if len(name) != 3:
        return None
    p, d, t = name
    ok = _PROJECT.fullmatch(p) and _DATASET.fullmatch(d) and _TABLE.fullmatch(t)
    return (p, d, t) if ok else None


def _resource(project: str, dataset: str, table: str | None = None) -> str:
    """A dataset's or table's full resource name (a wildcard table: its dataset)."""
    base = f"//bigquery.googleapis.com/projects/{project}/datasets/{dataset}"
    return base if table is None or table.endswith("*") else f"{base}/tables/{table}"


def _table(project: str, ref: Any) -> tuple[str, str, str] | None:
    """A ``TableReference`` (``projectId``, ``datasetId``, ``tableId``)."""
    if not isinstance(ref, dict) or not set(ref) <= {"projectId", "datasetId", "tableId"}:
        return None
    parts = (ref.get("projectId", project), ref.get("datasetId"), ref.get("tableId"))
    if not all(isinstance(p, str) for p in parts):
        return None
    return _named(tuple(str(p) for p in parts), project, None)


def _destination(project: str, job: Mapping[str, Any]) -> _Plan | None:
    dest = _table(project, job.get("destinationTable"))
    if dest is None or "*" in dest[2]:
        return None
    dataset = _resource(*dest[:2])
    truncates = job.get("writeDisposition") == "WRITE_TRUNCATE"
    checks = [("bigquery.tables.create", dataset), ("bigquery.tables.updateData", dataset)]
    return ("destructive" if truncates else "write"), checks, False


def _buckets(uris: Any, permission: str) -> list[Check] | None:
    uris = [uris] if isinstance(uris, str) else uris
    if not isinstance(uris, list) or not uris:
        return None
    found = [_BUCKET.fullmatch(u) if isinstance(u, str) else None for u in uris]
    if any(m is None for m in found):
        return None
    return [(permission, f"//storage.googleapis.com/projects/_/buckets/{m[1]}") for m in found if m]


_LOAD = frozenset(
    {
        "sourceUris",
        "destinationTable",
        "writeDisposition",
        "createDisposition",
        "sourceFormat",
        "schema",
        "skipLeadingRows",
        "fieldDelimiter",
        "autodetect",
        "encoding",
        "quote",
        "allowJaggedRows",
        "allowQuotedNewlines",
        "ignoreUnknownValues",
        "maxBadRecords",
        "nullMarker",
        "timePartitioning",
        "clustering",
        "schemaUpdateOptions",
        "useAvroLogicalTypes",
    }
)


def _load(project: str, job: Mapping[str, Any]) -> _Plan | None:
    dest, reads = _destination(project, job), _buckets(job.get("sourceUris"), "storage.objects.get")
    if not set(job) <= _LOAD or dest is None or reads is None:
        return None
    return dest[0], [*dest[1], *reads], False


def _extract(project: str, job: Mapping[str, Any]) -> _Plan | None:
    known = {"sourceTable", "destinationUris", "destinationUri", "destinationFormat"}
    known |= {"compression", "fieldDelimiter", "printHeader", "useAvroLogicalTypes"}
    table = _table(project, job.get("sourceTable"))
    uris = job.get("destinationUris", job.get("destinationUri"))
    writes = _buckets(uris, "storage.objects.create")
    if not set(job) <= known or table is None or writes is None:
        return None
    return "write", [("bigquery.tables.export", _resource(*table)), *writes], True


def _copy(project: str, job: Mapping[str, Any]) -> _Plan | None:
    known = {"sourceTable", "sourceTables", "destinationTable", "writeDisposition"}
    known |= {"createDisposition", "operationType", "destinationExpirationTime"}
    given = job.get("sourceTables", [job.get("sourceTable")])
    sources = [_table(project, s) for s in given] if isinstance(given, list) else [None]
    dest = _destination(project, job)
    if not set(job) <= known or dest is None or not sources or None in sources:
        return None
    reads = [("bigquery.tables.getData", _resource(*s)) for s in sources if s is not None]
    return dest[0], [*dest[1], *reads], False
