"""What the Google generators share: the methods of the discovery documents that
google-api-python-client ships (googleapiclient/discovery_cache/documents), and the paths
each method is reached at."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from toolpass.integrations._generate.table import progress


class Method(NamedTuple):
    doc: dict[str, Any]  # the whole discovery document
    host: str  # its API's host (www.googleapis.com, storage.googleapis.com, ...)
    api: str  # the API's name (drive, storage, ...)
    method: dict[str, Any]  # the method's description
    path: str  # its path template (flatPath where there is one)
    verb: str  # the last part of its id (list, insert, ...)
    http: str  # its HTTP method

    def paths(self) -> list[str]:
        """Every path the method is reached at: its own, and its media uploads' (an upload
        path taking any number of segments has no route, so it is refused)."""
        found = [f"/{self.host}/{self.doc['servicePath']}{self.path}"]
        for proto in (self.method.get("mediaUpload") or {}).get("protocols", {}).values():
            if "{+" not in proto["path"]:
                found.append(f"/{self.host}{proto['path']}")
        return [re.sub(r"/+", "/", p) for p in found]


def methods(names: tuple[str, ...]) -> Iterator[Method]:
    """The methods of the discovery documents ``names`` (``drive.v3``, ...), except those
    whose path takes any number of segments (no route: refused)."""
    import googleapiclient

    folder = Path(googleapiclient.__file__).parent / "discovery_cache/documents"
    for name in progress(names, "discovery documents"):
        doc = json.loads((folder / f"{name}.json").read_text("utf-8"))
        host = doc["rootUrl"].split("//", 1)[1].rstrip("/")
        for m in [*doc.get("methods", {}).values(), *_nested(doc.get("resources", {}))]:
            path = m.get("flatPath") or m["path"]
            if "{+" not in path:
                verb = m["id"].rsplit(".", 1)[1]
                yield Method(doc, host, doc["name"], m, path, verb, m["httpMethod"])


def _nested(resources: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for res in resources.values():
        found.extend(res.get("methods", {}).values())
        found.extend(_nested(res.get("resources", {})))
    return found
