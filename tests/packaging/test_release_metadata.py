"""``scripts/release.py check``: every distribution carries the same project URLs, authors
and license as core, core's Documentation and Source are the documentation site's, and no
distribution is classified for a Python its requires-python excludes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import tomllib
from test_release import ROOT, checkout, release

__all__ = ["checkout"]  # the fixture, shared with test_release.py
PY310 = '"Programming Language :: Python :: 3.10",'
PY311 = '"Programming Language :: Python :: 3.11",'


def site_setting(name: str) -> str:
    found = re.search(rf"^{name}:\s*(\S+)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert found, name
    return found[1]


def test_every_distribution_points_at_the_documentation_site() -> None:
    pyprojects = sorted(ROOT.glob("*/pyproject.toml")) + sorted(ROOT.glob("*/*/pyproject.toml"))
    metas = [tomllib.loads(p.read_text())["project"] for p in pyprojects if p.parent != ROOT]
    assert len(metas) == 12
    urls = {m["name"]: m["urls"] for m in metas}
    assert all(u == urls["toolpass-core"] for u in urls.values()), urls
    assert urls["toolpass-core"]["Documentation"] == site_setting("site_url")
    assert urls["toolpass-core"]["Source"] == site_setting("repo_url")


def test_urls_authors_and_classifiers_that_disagree_are_named(checkout: Path) -> None:
    shutil.copyfile(ROOT / "mkdocs.yml", checkout / "mkdocs.yml")
    assert release("--root", checkout, "check").returncode == 0
    crewai = checkout / "adapters/crewai/pyproject.toml"
    crewai.write_text(
        crewai.read_text()
        .replace("https://toolpass.github.io/toolpass/", "https://example.org/docs")
        .replace(PY311, f"{PY310}\n  {PY311}")
    )
    server = checkout / "packages/server/pyproject.toml"
    server.write_text(server.read_text().replace("The toolpass authors", "Someone"))
    site = checkout / "mkdocs.yml"
    site.write_text(site.read_text().replace("site_url: https://", "site_url: http://"))
    done = release("--root", checkout, "check")
    assert done.returncode == 1
    assert sorted(done.stderr.splitlines()) == [
        "release: adapters/crewai/pyproject.toml: classifier "
        "'Programming Language :: Python :: 3.10' outside requires-python '>=3.11'",
        "release: adapters/crewai/pyproject.toml: urls differ from core/pyproject.toml's",
        "release: core/pyproject.toml: urls.Documentation is not mkdocs.yml's site_url",
        "release: packages/server/pyproject.toml: authors differ from core/pyproject.toml's",
    ]
