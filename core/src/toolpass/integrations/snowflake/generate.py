"""Generate the Snowflake route table from Snowflake's published OpenAPI descriptions.

Source: the GitHub repository snowflakedb/snowflake-rest-api-specs (``specifications/*.yaml``:
the REST resource APIs and the SQL API, ``sqlapi.yaml``), one file per resource. Fetch it and
run::

    git clone https://github.com/snowflakedb/snowflake-rest-api-specs /tmp/sfspecs
    python -m toolpass.integrations.snowflake.generate --source /tmp/sfspecs

The table records the commit it read (``--commit``, else ``git rev-parse HEAD`` of the
source). Paths are relative to the account URL (``https://<org>-<account>.snowflakecomputing
.com``); ``{name}:action`` segments stay as the specs spell them.

Actions are the integration's (``snowflake/actions.json``). The curated rules (``RULES``,
first match wins) follow Snowflake's access-control privileges (permission-apis.md section
20): a table, view, dynamic, Iceberg or event table named in the path is checked against its
privileges (GET reads it, anything else is its owner's); a schema, database or warehouse
likewise; creating one needs the CREATE privilege of its container. Objects with no action of
their own (stages, functions, tasks, pipes, ...) are read with ``schema.use`` and changed with
``schema.manage``; what runs code or a query (procedure calls, function and task execution,
``:as-select``, ``:using-template``, Spark Connect plans) and everything else at account level
(users, roles, grants, integrations, policies) is ``account.admin``: fail closed. The SQL
API's statement route is ``account.admin`` here; the integration narrows a plain statement to
its object (``integrations/_snowflake_sql.py``). Flags: statement results, result pages and
Cortex answers are untrusted (``u``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import yaml  # PyYAML, at development time only

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/snowflake/routes.json"
METHODS = ("get", "put", "post", "delete", "patch")
READ, WRITES, ANY = "GET", "POST|PUT|PATCH|DELETE", "GET|POST|PUT|PATCH|DELETE"
ACCOUNT = "account"
S = r"^/api/v2/databases/\{database\}/schemas/\{schema\}"
TABLE = "table:{database}.{schema}.{name}"
SCHEMA_OF = "schema:{database}.{schema}"
TABLES = r"(?:tables|views|dynamic-tables|iceberg-tables|event-tables)"
RUNS = r":(?:call|execute|as_select|as-select|using_template|using-template|execute-job)$"

# (methods, path regex, action, resource, flags, effect or ""). First match wins.
RULES: list[tuple[str, str, str, str, str, str]] = [
    # the SQL API (the integration narrows a statement by its SQL)
    ("POST", r"^/api/v2/statements$", "account.admin", ACCOUNT, "u", ""),
    (READ, r"^/api/v2/statements/\{statementHandle\}$", "account.access", ACCOUNT, "u", ""),
    ("POST", r"^/api/v2/statements/\{statementHandle\}/cancel$", "account.access", ACCOUNT, "", ""),
    (READ, r"^/api/v2/results/", "account.access", ACCOUNT, "u", ""),
    # Cortex: model output
    (ANY, r"^/api/v2/cortex/", "account.cortex", ACCOUNT, "u", ""),
    (
        "POST",
        S + r"/cortex-search-services/\{\w+\}:(?:query|suggest)$",
        "schema.use",
        SCHEMA_OF,
        "u",
        "read",
    ),
    # what runs code or a query: no object says what it touches
    (WRITES, S + r"/[a-z-]+(?:/\{\w+\})?" + RUNS, "account.admin", ACCOUNT, "", ""),
    (WRITES, S + r"/[a-z-]+" + RUNS, "account.admin", ACCOUNT, "", ""),
    # tables and views
    (READ, S + rf"/{TABLES}/\{{name\}}", "table.read", TABLE, "", ""),
    (WRITES, S + rf"/{TABLES}/\{{name\}}", "table.manage", TABLE, "", ""),
    ("POST", S + r"/views$", "schema.create_view", SCHEMA_OF, "", ""),
    ("POST", S + rf"/{TABLES}(?::[a-z-]+)?$", "schema.create_table", SCHEMA_OF, "", ""),
    # other objects in a schema (stage file names and service logs are untrusted)
    (
        READ,
        S + r"/(?:stages/\{name\}/files|services/\{name\}/logs)$",
        "schema.use",
        SCHEMA_OF,
        "u",
        "",
    ),
    (READ, S + r"/", "schema.use", SCHEMA_OF, "", ""),
    (WRITES, S + r"/", "schema.manage", SCHEMA_OF, "", ""),
    # schemas
    (
        READ,
        r"^/api/v2/databases/\{database\}/schemas/\{name\}",
        "schema.use",
        "schema:{database}.{name}",
        "",
        "",
    ),
    (
        WRITES,
        r"^/api/v2/databases/\{database\}/schemas/\{name\}",
        "schema.manage",
        "schema:{database}.{name}",
        "",
        "",
    ),
    (
        "POST",
        r"^/api/v2/databases/\{database\}/schemas$",
        "database.create_schema",
        "database:{database}",
        "",
        "",
    ),
    (READ, r"^/api/v2/databases/\{database\}/", "database.use", "database:{database}", "", ""),
    (WRITES, r"^/api/v2/databases/\{database\}/", "database.manage", "database:{database}", "", ""),
    # databases
    (READ, r"^/api/v2/databases/\{name\}", "database.use", "database:{name}", "", ""),
    (
        "POST",
        r"^/api/v2/databases/\{name\}:(?:clone|from_share)$",
        "account.create_database",
        ACCOUNT,
        "",
        "",
    ),
    (WRITES, r"^/api/v2/databases/\{name\}", "database.manage", "database:{name}", "", ""),
    ("POST", r"^/api/v2/databases(?::from-share)?$", "account.create_database", ACCOUNT, "", ""),
    # warehouses
    (READ, r"^/api/v2/warehouses/\{name\}", "warehouse.use", "warehouse:{name}", "", ""),
    ("POST", r"^/api/v2/warehouses/\{name\}:use$", "warehouse.use", "warehouse:{name}", "", ""),
    (
        "POST",
        r"^/api/v2/warehouses/\{name\}:(?:resume|suspend|abort)$",
        "warehouse.operate",
        "warehouse:{name}",
        "",
        "",
    ),
    (WRITES, r"^/api/v2/warehouses/\{name\}", "warehouse.manage", "warehouse:{name}", "", ""),
    ("POST", r"^/api/v2/warehouses$", "account.create_warehouse", ACCOUNT, "", ""),
    # users and roles
    ("POST", r"^/api/v2/users$", "account.create_user", ACCOUNT, "", ""),
    ("POST", r"^/api/v2/roles$", "account.create_role", ACCOUNT, "", ""),
]


def operations(source: Path) -> list[tuple[str, str]]:
    """(method, path) of every operation in the specifications."""
    ops: set[tuple[str, str]] = set()
    for spec in sorted((source / "specifications").glob("*.yaml")):
        data = yaml.safe_load(spec.read_text())
        for path, item in (data.get("paths") or {}).items():
            for method in METHODS:
                if isinstance(item, dict) and method in item:
                    ops.add((method.upper(), path))
    return sorted(ops)


def classify(method: str, path: str) -> list[str]:
    effect = "read" if method == "GET" else "destructive" if method == "DELETE" else "write"
    for methods, pattern, action, resource, flags, fixed in RULES:
        if method in methods.split("|") and re.search(pattern, path):
            return [method, path, action, resource, fixed or effect, flags]
    if method == "GET":
        return [method, path, "account.access", ACCOUNT, effect, ""]
    return [method, path, "account.admin", ACCOUNT, effect, ""]


def build(source: Path) -> tuple[list[list[str]], int]:
    """The table's rows sorted by path and method, and the operations read."""
    ops = operations(source)
    rows = [classify(m, p) for m, p in ops]
    return sorted(rows, key=lambda r: (r[1], r[0])), len(ops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the specs repository")
    parser.add_argument("--commit", help="the commit read (default: the source's HEAD)")
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    commit = (
        ns.commit
        or subprocess.run(
            ["git", "-C", str(ns.source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    rows, count = build(ns.source)
    data = {
        "source": f"github snowflakedb/snowflake-rest-api-specs {commit} (specifications/*.yaml, "
        f"the REST APIs and the SQL API, specs 10.10: {count} operations)",
        "generator": "core/src/toolpass/integrations/snowflake/generate.py",
        "routes": rows,
    }
    ns.out.write_text(dump(data))
    print(f"{len(rows)} routes from {count} operations -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
