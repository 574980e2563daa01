"""Write Azure Resource Manager's route table: generic rows, curated from ARM's REST
conventions.

Resource Manager names every request's operation the same way for every provider (Azure's
"Resource provider operations" list and the "Resource Manager REST API" reference): the path
``/{scope}/providers/{Namespace}/{type}/{name}[/{child type}/{child name}...]`` names the
operation ``{Namespace}/{type}/{child type}/...`` with ``read`` (GET, HEAD), ``write`` (PUT,
PATCH), ``delete`` (DELETE), and ``.../{verb}/action`` for a POST to ``.../{verb}``; paths with
no provider are ``Microsoft.Resources`` (subscriptions, resource groups). So the table is a
handful of generic rows, not one per operation of every provider (Azure publishes thousands
across its azure-rest-api-specs): ``Azure.match_request`` derives the concrete operation and
the lower-cased ARM id from each request's path, and these rows document the rule for
``toolpass routes azure``. A path that is not an ARM resource path (``/batch``, ...) takes no
route, so a write to it is refused.

Run ``python -m toolpass.integrations.azure.generate``; it writes
``routes.json`` beside this file.
"""

from __future__ import annotations

from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/azure/routes.json"
SOURCE = (
    "curated: the generic Azure Resource Manager operation rule (learn.microsoft.com "
    "'Azure resource provider operations', 'Azure REST API reference'), applied by "
    "Azure.match_request to every ARM path; no per-operation table"
)
ROOTS = ("/subscriptions/{arm+}", "/providers/{arm+}")


def build() -> dict[str, object]:
    rows: list[list[str]] = [
        ["GET", "/subscriptions", "Microsoft.Resources/subscriptions/read", "/", "read", "a"],
        ["GET", "/providers", "Microsoft.Resources/subscriptions/providers/read", "/", "read", "a"],
    ]
    for root in ROOTS:
        rows += [
            ["GET", root, "{namespace}/{types}/read", "{id}", "read", ""],
            ["HEAD", root, "{namespace}/{types}/read", "{id}", "read", ""],
            ["PUT", root, "{namespace}/{types}/write", "{id}", "write", ""],
            ["PATCH", root, "{namespace}/{types}/write", "{id}", "write", ""],
            ["DELETE", root, "{namespace}/{types}/delete", "{id}", "destructive", ""],
            ["POST", root, "{namespace}/{types}/{verb}/action", "{id}", "write", ""],
        ]
    rows.sort(key=lambda r: (r[1], r[0]))
    return {
        "source": SOURCE,
        "generator": "core/src/toolpass/integrations/azure/generate.py",
        "routes": rows,
    }


def main() -> None:
    OUT.write_text(dump(build()))


if __name__ == "__main__":
    main()
