"""Write Salesforce's route table, curated from the REST API Developer Guide.

Salesforce publishes no machine-readable description of its REST API that can be had
offline (the org's own describe and the Postman collection need a live org or a download), so
the table is curated here, as data, from the REST API Developer Guide's resource reference
(API v62.0, Winter '25): paths are relative to the connection URL (the org's My Domain,
``https://<domain>.my.salesforce.com``), ``{version}`` is the ``vXX.X`` segment.

Mapping: a record resource (``sobjects/{sobject}/{id}``) needs the record action
(``record:{sobject}/{id}``); a resource of one object (describe, create, tree insert, the
object's lists) the object action (``object:{sobject}``); a SOQL query ``object.view_all`` on
the object its ``FROM`` names (``Salesforce.match_request`` reads ``q``: the query answers every
record the agent's credential sees, so the user must see every record of it); the org's own metadata
(versions, limits, describe global) ``org.access``; everything that spans objects or changes
the org (composite and batch bodies, SOSL search, Tooling, Apex REST, Bulk API jobs, invocable
actions) ``org.admin``. Flags: ``u`` for answers carrying records, ``a`` for the agent's own
identity and limits.

Run ``python -m toolpass.integrations.salesforce.generate``; it writes
``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/salesforce/routes.json"
D = "/services/data/{version}"
OBJ = "object:{sobject}"
REC = "record:{sobject}/{id}"

ROUTES: list[list[str]] = [
    # versions, resources, limits, the agent itself
    ["GET", "/services/data", "org.access", "org", "read", "a"],
    ["GET", D, "org.access", "org", "read", "a"],
    ["GET", f"{D}/limits", "org.access", "org", "read", "a"],
    ["GET", "/services/oauth2/userinfo", "org.access", "org", "read", "a"],
    ["GET", f"{D}/sobjects", "org.access", "org", "read", ""],
    ["GET", f"{D}/recent", "org.access", "org", "read", "u"],
    ["GET", f"{D}/tabs", "org.access", "org", "read", ""],
    ["GET", f"{D}/theme", "org.access", "org", "read", ""],
    ["GET", f"{D}/appMenu", "org.access", "org", "read", ""],
    ["GET", f"{D}/quickActions", "org.access", "org", "read", ""],
    # one object
    ["GET", f"{D}/sobjects/{{sobject}}", "object.read", OBJ, "read", "u"],
    ["POST", f"{D}/sobjects/{{sobject}}", "object.create", OBJ, "write", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/describe", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/describe/layouts", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/describe/compactLayouts", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/describe/approvalLayouts", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/updated", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/deleted", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/listviews", "object.read", OBJ, "read", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/quickActions", "object.read", OBJ, "read", ""],
    # records by id (?ids=): every one of them, as a query would
    ["GET", f"{D}/composite/sobjects/{{sobject}}", "object.view_all", OBJ, "read", "u"],
    ["POST", f"{D}/composite/tree/{{sobject}}", "object.create", OBJ, "write", ""],
    # upsert by external id: creates or edits, so both (object.modify_all bounds neither)
    [
        "PATCH",
        f"{D}/sobjects/{{sobject}}/{{field}}/{{value}}",
        "object.modify_all",
        OBJ,
        "write",
        "",
    ],
    [
        "DELETE",
        f"{D}/sobjects/{{sobject}}/{{field}}/{{value}}",
        "object.modify_all",
        OBJ,
        "destructive",
        "",
    ],
    # one record
    ["GET", f"{D}/sobjects/{{sobject}}/{{id}}", "record.read", REC, "read", "u"],
    ["HEAD", f"{D}/sobjects/{{sobject}}/{{id}}", "record.read", REC, "read", ""],
    ["PATCH", f"{D}/sobjects/{{sobject}}/{{id}}", "record.edit", REC, "write", ""],
    ["DELETE", f"{D}/sobjects/{{sobject}}/{{id}}", "record.delete", REC, "destructive", ""],
    ["GET", f"{D}/sobjects/{{sobject}}/{{id}}/{{field}}", "record.read", REC, "read", "u"],
    ["GET", f"{D}/ui-api/records/{{id}}", "org.admin", "org", "read", "u"],
    # SOQL: the object is read from q by Salesforce.match_request
    ["GET", f"{D}/query", "org.admin", "org", "read", "u"],
    ["GET", f"{D}/queryAll", "org.admin", "org", "read", "u"],
    ["GET", f"{D}/query/{{locator}}", "org.access", "org", "read", "u"],
    ["GET", f"{D}/queryAll/{{locator}}", "org.access", "org", "read", "u"],
    # spanning objects or changing the org
    ["GET", f"{D}/search", "org.admin", "org", "read", "u"],
    ["GET", f"{D}/parameterizedSearch", "org.admin", "org", "read", "u"],
    ["POST", f"{D}/parameterizedSearch", "org.admin", "org", "read", "u"],
    ["POST", f"{D}/composite", "org.admin", "org", "destructive", "u"],
    ["POST", f"{D}/composite/batch", "org.admin", "org", "destructive", "u"],
    ["POST", f"{D}/composite/graph", "org.admin", "org", "destructive", "u"],
    ["POST", f"{D}/composite/sobjects", "org.admin", "org", "write", ""],
    ["PATCH", f"{D}/composite/sobjects", "org.admin", "org", "write", ""],
    ["DELETE", f"{D}/composite/sobjects", "org.admin", "org", "destructive", ""],
    [
        "PATCH",
        f"{D}/composite/sobjects/{{sobject}}/{{field}}",
        "object.modify_all",
        OBJ,
        "write",
        "",
    ],
    ["GET", f"{D}/tooling/{{path+}}", "org.admin", "org", "read", "u"],
    ["POST", f"{D}/tooling/{{path+}}", "org.admin", "org", "destructive", ""],
    ["PATCH", f"{D}/tooling/{{path+}}", "org.admin", "org", "destructive", ""],
    ["DELETE", f"{D}/tooling/{{path+}}", "org.admin", "org", "destructive", ""],
    ["GET", f"{D}/jobs/{{path+}}", "org.admin", "org", "read", "u"],
    ["POST", f"{D}/jobs/{{path+}}", "org.admin", "org", "destructive", ""],
    ["PUT", f"{D}/jobs/{{path+}}", "org.admin", "org", "destructive", ""],
    ["PATCH", f"{D}/jobs/{{path+}}", "org.admin", "org", "destructive", ""],
    ["DELETE", f"{D}/jobs/{{path+}}", "org.admin", "org", "destructive", ""],
    ["GET", f"{D}/actions/{{path+}}", "org.admin", "org", "read", ""],
    ["POST", f"{D}/actions/{{path+}}", "org.admin", "org", "destructive", "s"],
    ["GET", f"{D}/process/{{path+}}", "org.admin", "org", "read", ""],
    ["POST", f"{D}/process/{{path+}}", "org.admin", "org", "destructive", ""],
    ["GET", "/services/apexrest/{path+}", "org.admin", "org", "read", "u"],
    ["POST", "/services/apexrest/{path+}", "org.admin", "org", "destructive", "s"],
    ["PUT", "/services/apexrest/{path+}", "org.admin", "org", "destructive", "s"],
    ["PATCH", "/services/apexrest/{path+}", "org.admin", "org", "destructive", "s"],
    ["DELETE", "/services/apexrest/{path+}", "org.admin", "org", "destructive", ""],
]


def build() -> list[list[str]]:
    """The rows, sorted by path then method."""
    return sorted(ROUTES, key=lambda r: (r[1], r[0]))


def main() -> None:
    data = {
        "source": "curated from the Salesforce REST API Developer Guide (API v62.0, Winter '25)",
        "generator": "core/src/toolpass/integrations/salesforce/generate.py",
        "routes": build(),
    }
    OUT.write_text(dump(data))
    print(f"{OUT}: {len(data['routes'])} routes")  # noqa: T201


if __name__ == "__main__":
    main()
