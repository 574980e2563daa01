"""The Salesforce route table (curated from the REST API Developer Guide) and Salesforce's
override, which reads a SOQL query's object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.routes import Request, fields, load
from toolpass.integrations.salesforce import Salesforce, soql_object

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/salesforce/routes.json"
RECORD = "001000000000001AAA"
V = "/services/data/v62.0"


@pytest.fixture(scope="module")
def sf() -> Salesforce:
    (config,) = parse_connections(
        [
            {
                "id": "sf",
                "integration": "salesforce",
                "url": "https://acme.my.salesforce.com",
                "access_token": literal("token"),
            }
        ]
    )
    return Salesforce(config)


def test_the_table_loads_with_its_source_and_regenerates() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/salesforce/generate.py"
    assert data["source"].startswith("curated from the Salesforce REST API Developer Guide")
    assert load_generator("salesforce").build() == data["routes"]
    assert len(load("toolpass.integrations.salesforce")) == len(data["routes"]) > 50
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_route_names_a_declared_action_and_a_resource_the_check_takes() -> None:
    samples = {"sobject": "Account", "id": RECORD}
    for route in load("toolpass.integrations.salesforce").routes:
        action = Salesforce.action(route.action)
        assert action is not None, route
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", samples[name])
        expected = {
            "record": f"record:Account/{RECORD}",
            "object": "object:Account",
            "org": "org",
        }[action.terms["scope"]]
        assert resource == expected, route


@pytest.mark.parametrize(
    ("method", "path", "query", "action", "resource"),
    [
        ("GET", f"{V}/sobjects/Account/{RECORD}", "", "record.read", f"record:Account/{RECORD}"),
        ("PATCH", f"{V}/sobjects/Account/{RECORD}", "", "record.edit", f"record:Account/{RECORD}"),
        (
            "DELETE",
            f"{V}/sobjects/Account/{RECORD}",
            "",
            "record.delete",
            f"record:Account/{RECORD}",
        ),
        ("POST", f"{V}/sobjects/Account", "", "object.create", "object:Account"),
        ("POST", f"{V}/sobjects/Account/", "", "object.create", "object:Account"),
        ("GET", f"{V}/sobjects/Account/describe", "", "object.read", "object:Account"),
        ("PATCH", f"{V}/sobjects/Account/Ext__c/42", "", "object.modify_all", "object:Account"),
        ("GET", f"{V}/query/", "q=SELECT+Id+FROM+Contact", "object.view_all", "object:Contact"),
        ("GET", f"{V}/queryAll", "q=select+Id+from+Case", "object.view_all", "object:Case"),
        (
            "GET",
            f"{V}/query",
            "q=SELECT+Id,(SELECT+Id+FROM+Cases)+FROM+Contact",
            "org.admin",
            "org",
        ),
        ("GET", f"{V}/query", "q=SELECT+Id+FROM+A&q=SELECT+Id+FROM+B", "org.admin", "org"),
        ("GET", f"{V}/query", "", "org.admin", "org"),
        ("GET", f"{V}/query/01gD0000002HU6KIAW-2000", "", "org.access", "org"),
        ("POST", f"{V}/composite", "", "org.admin", "org"),
        ("POST", f"{V}/composite/tree/Account", "", "object.create", "object:Account"),
        ("GET", f"{V}/tooling/query", "q=SELECT+Id+FROM+ApexClass", "org.admin", "org"),
        ("POST", "/services/apexrest/my/endpoint", "", "org.admin", "org"),
        ("GET", f"{V}/limits", "", "org.access", "org"),
    ],
)
def test_requests_take_their_routes(
    sf: Salesforce, method: str, path: str, query: str, action: str, resource: str
) -> None:
    found = sf.match_request(Request(method, path, query, None, b""))
    assert found is not None
    assert (found.route.action, found.resource) == (action, resource)


@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", f"{V}/sobjects/Account/{RECORD}"), ("POST", "/services/Soap/u/62.0")],
)
def test_unlisted_requests_match_no_route(sf: Salesforce, method: str, path: str) -> None:
    assert sf.match_request(Request(method, path, "", None, b"")) is None


@pytest.mark.parametrize(
    ("soql", "sobject"),
    [
        ("SELECT Id FROM Account", "Account"),
        ("select Id, Name from Contact where Name = 'x'", "Contact"),
        ("SELECT Id FROM Account WHERE Name = 'FROM Contact'", None),
        ("SELECT Id, (SELECT Id FROM Contacts) FROM Account", None),
        ("SELECT TYPEOF What WHEN Account THEN Name END FROM Event", None),
        ("SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact)", None),
        ("SELECT Id", None),
    ],
)
def test_soql_object(soql: str, sobject: str | None) -> None:
    assert soql_object(soql) == sobject
