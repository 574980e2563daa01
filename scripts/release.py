"""Build and check every toolpass distribution for a release, from one version source.

    python3 scripts/release.py check              the sources agree (no build)
    python3 scripts/release.py sync [VERSION]     write VERSION (default: core's) everywhere
    python3 scripts/release.py build [--out DIR]  check, then build each wheel and sdist with
                                                  ``uv build`` and check what was built

The version is ``__version__`` in ``core/src/toolpass/_version.py``; ``sync`` derives from it
the ``version`` of every other distribution, their ``toolpass-core>=X,<Y`` range (the
releases of the same minor version before 1.0, of the same major version after), and copies
the root ``LICENSE`` into every distribution folder (a build ships only files of its own
folder). ``check`` and ``build`` fail on any disagreement. A built distribution must carry:
its version, ``License-Expression: Apache-2.0`` and the LICENSE text, authors, project URLs,
a Python classifier for each version from ``requires-python`` up to the newest supported,
"OS Independent" and "Typed" (and none for a version requires-python excludes), the same
project URLs, authors and license as core (whose Documentation and Source are the
documentation site's, mkdocs.yml), a Markdown README whose links are absolute (a relative link is
broken on PyPI), and pass ``twine check --strict`` (which renders the README as PyPI does).
Exit status 0 when all is well, 1 with one line per problem on stderr otherwise, 2 for bad
usage.
Needs Python 3.11 (tomllib), and ``uv`` for ``build`` (``uvx`` fetches twine).
"""

from __future__ import annotations

import argparse
import email.message
import email.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
VERSION_FILE = Path("core/src/toolpass/_version.py")
NEWEST_PYTHON = (3, 13)
_VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.M)
_CORE_REQUIREMENT = re.compile(r'(?<!name = )"toolpass-core(\[[a-z,]+\])?[^"]*"')
_LINK = re.compile(r"\]\(([^)\s]+)")
_ABSOLUTE = ("http://", "https://", "mailto:", "#")


def projects(root: Path) -> list[Path]:
    """Every distribution folder: core, the packages and the adapters."""
    found = [root / "core", *root.glob("packages/*"), *root.glob("adapters/*")]
    return sorted(p for p in found if (p / "pyproject.toml").is_file())


def version(root: Path) -> str:
    """The one version source."""
    found = _VERSION.search((root / VERSION_FILE).read_text())
    if found is None:
        raise SystemExit(f"release: no __version__ in {VERSION_FILE}")
    return found[1]


def core_range(release: str) -> str:
    """``>=X,<Y``: the releases of core an adapter of ``release`` works with."""
    major, minor = (int(n) for n in release.split(".")[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f">={release},<{upper}"


def sync(root: Path, release: str) -> None:
    """Write ``release`` to the version source and everywhere it is derived."""
    source = root / VERSION_FILE
    source.write_text(_VERSION.sub(f'__version__ = "{release}"', source.read_text()))
    for project in projects(root):
        path = project / "pyproject.toml"
        text = re.sub(
            r'^version = "[^"]*"$', f'version = "{release}"', path.read_text(), flags=re.M
        )
        text = _CORE_REQUIREMENT.sub(
            lambda m: f'"toolpass-core{m[1] or ""}{core_range(release)}"', text
        )
        path.write_text(text)
        dynamic = _version_file(project)
        if dynamic is not None:
            dynamic.write_text(_VERSION.sub(f'__version__ = "{release}"', dynamic.read_text()))
        shutil.copyfile(root / "LICENSE", project / "LICENSE")


def _version_file(project: Path) -> Path | None:
    """The file a dynamic version is read from (``[tool.hatch.version] path``), if any."""
    config = tomllib.loads((project / "pyproject.toml").read_text())
    path = config.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    return project / path if path else None


def _version_of(project: Path) -> str | None:
    """A distribution's version: static, or from its version file."""
    dynamic = _version_file(project)
    if dynamic is None:
        meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        return meta.get("version")
    found = _VERSION.search(dynamic.read_text())
    return found[1] if found else None


def check_sources(root: Path) -> list[str]:
    """What disagrees with the version source, or is missing, before anything is built."""
    release = version(root)
    problems = []
    for project in projects(root):
        path = project / "pyproject.toml"
        where = path.relative_to(root)
        meta = tomllib.loads(path.read_text())["project"]
        if _version_of(project) != release:
            problems.append(f"{where}: version {_version_of(project)!r}, not {release!r}")
        wanted = core_range(release)
        for requirement in _core_requirements(meta):
            if not requirement.endswith(wanted):
                problems.append(f"{where}: {requirement!r} is not toolpass-core{wanted}")
        if (
            not (project / "LICENSE").is_file()
            or (project / "LICENSE").read_bytes() != (root / "LICENSE").read_bytes()
        ):
            problems.append(f"{where.parent / 'LICENSE'}: not the root LICENSE (run sync)")
        problems += [f"{where}: {p}" for p in _metadata_problems(meta)]
    return problems + _shared_problems(root)


#: What every distribution says alike, as core's pyproject.toml says it.
SHARED = ("urls", "authors", "license")


def _shared_problems(root: Path) -> list[str]:
    """Every distribution's URLs, authors and license are core's; core's Documentation and
    Source are the documentation site's ``site_url`` and ``repo_url`` (mkdocs.yml)."""
    core = tomllib.loads((root / "core/pyproject.toml").read_text())["project"]
    problems = []
    for project in projects(root):
        meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        where = (project / "pyproject.toml").relative_to(root)
        problems += [
            f"{where}: {key} differ from core/pyproject.toml's"
            for key in SHARED
            if meta.get(key) != core.get(key)
        ]
    site = root / "mkdocs.yml"
    if site.is_file():
        text = site.read_text()
        urls = core.get("urls", {})
        for key, name in (("Documentation", "site_url"), ("Source", "repo_url")):
            found = re.search(rf"^{name}:\s*(\S+)\s*$", text, re.M)
            if found is None or urls.get(key) != found[1]:
                problems.append(f"core/pyproject.toml: urls.{key} is not mkdocs.yml's {name}")
    return problems


def _core_requirements(meta: dict[str, object]) -> Iterator[str]:
    groups = [meta.get("dependencies", [])]
    groups += list(dict(meta.get("optional-dependencies", {})).values())  # type: ignore[call-overload]
    for group in groups:
        for requirement in group:  # type: ignore[attr-defined]
            if re.match(r"toolpass-core\b", requirement):
                yield requirement


def _metadata_problems(meta: dict[str, object]) -> list[str]:
    problems = []
    for key in ("description", "readme", "license", "license-files", "authors", "urls"):
        if not meta.get(key):
            problems.append(f"no {key}")
    if meta.get("license") != "Apache-2.0":
        problems.append(f"license {meta.get('license')!r}, not 'Apache-2.0'")
    classifiers = list(meta.get("classifiers", []))  # type: ignore[call-overload]
    problems += [f"classifier {c!r} missing" for c in _classifiers(meta) if c not in classifiers]
    return problems + _stray_classifiers(meta, classifiers)


def _stray_classifiers(meta: dict[str, object], classifiers: list[str]) -> list[str]:
    """Python versions classified that requires-python (up to the newest supported) excludes."""
    wanted = set(_classifiers(meta))
    return [
        f"classifier {c!r} outside requires-python {meta.get('requires-python')!r}"
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c) and c not in wanted
    ]


def _classifiers(meta: dict[str, object]) -> list[str]:
    """The classifiers every distribution carries, Python's from its requires-python."""
    lowest = re.fullmatch(r">=\s*3\.(\d+)", str(meta.get("requires-python", "")))
    minors = range(int(lowest[1]), NEWEST_PYTHON[1] + 1) if lowest else []
    return [
        "Operating System :: OS Independent",
        "Programming Language :: Python :: 3",
        *(f"Programming Language :: Python :: 3.{m}" for m in minors),
        "Typing :: Typed",
    ]


def build(root: Path, out: Path) -> list[str]:
    """Build every distribution into ``out`` and check each wheel and sdist."""
    problems = []
    release = version(root)
    for project in projects(root):
        before = set(out.iterdir()) if out.exists() else set()
        done = subprocess.run(
            ["uv", "build", "-q", "--out-dir", str(out), str(project)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            problems.append(f"{project.relative_to(root)}: uv build failed: {done.stderr.strip()}")
            continue
        for built in sorted(set(out.iterdir()) - before):
            if built.suffix == ".whl" or built.name.endswith(".tar.gz"):
                problems += [f"{built.name}: {p}" for p in check_built(built, release)]
    return problems + _twine(out)


def check_built(path: Path, release: str) -> list[str]:
    """What is wrong with a built wheel or sdist."""
    metadata, names, license_text = _read_built(path)
    problems = []
    if metadata.get("Version") != release:
        problems.append(f"version {metadata.get('Version')!r}, not {release!r}")
    if metadata.get("License-Expression") != "Apache-2.0":
        problems.append("no License-Expression: Apache-2.0")
    if not license_text or b"Apache License" not in license_text:
        problems.append("no LICENSE file with the Apache-2.0 text")
    for field in ("Summary", "Author", "Requires-Python", "Project-URL"):
        if not metadata.get(field):
            problems.append(f"no {field}")
    classifiers = metadata.get_all("Classifier") or []
    meta = {"requires-python": metadata.get("Requires-Python", "")}
    problems += [f"classifier {c!r} missing" for c in _classifiers(meta) if c not in classifiers]
    problems += _stray_classifiers(meta, classifiers)
    wanted = core_range(release)
    for requirement in metadata.get_all("Requires-Dist") or []:
        found = re.match(r"toolpass-core(\[[^\]]*\])?\s*([^;]*)", requirement)
        if found and _specifiers(found[2]) != _specifiers(wanted):
            problems.append(f"{requirement!r} does not pin toolpass-core{wanted}")
    if metadata.get("Description-Content-Type") != "text/markdown":
        problems.append("the README is not Markdown (Description-Content-Type)")
    readme = metadata.get_payload()
    if not isinstance(readme, str) or not readme.strip():
        problems.append("no README in the metadata")
    else:
        problems += [f"README link {t!r} is relative (broken on PyPI)" for t in _relative(readme)]
    if path.suffix == ".whl" and not any(n.endswith("/py.typed") for n in names):
        problems.append("no py.typed (the Typed classifier says there is)")
    if path.suffix == ".whl":
        problems += [
            f"ships {n}, which only a source checkout needs"
            for n in names
            if CHECKOUT_ONLY.search(n)
        ]
    return problems


#: What a source tree holds beside the code but a wheel must not ship: tests, fakes, conftest
#: files, route generators (each system's folder in core holds all four).
CHECKOUT_ONLY = re.compile(r"(^|/)(tests|_generate)/|(^|/)(fake|generate|conftest)\.py$")


def _specifiers(text: str) -> set[str]:
    return {part.replace(" ", "") for part in text.split(",") if part.strip()}


def _read_built(path: Path) -> tuple[email.message.Message, list[str], bytes | None]:
    """The metadata, the member names and the LICENSE text of a wheel or sdist."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            names = wheel.namelist()
            meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
            lic = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
            text = wheel.read(meta).decode()
            license_text = wheel.read(lic[0]) if lic else None
    else:
        with tarfile.open(path) as sdist:
            names = sdist.getnames()
            top = names[0].split("/")[0]
            text = _member(sdist, f"{top}/PKG-INFO").decode()
            license_text = _member(sdist, f"{top}/LICENSE") if f"{top}/LICENSE" in names else None
    return email.parser.Parser().parsestr(text), names, license_text


def _member(archive: tarfile.TarFile, name: str) -> bytes:
    member = archive.extractfile(name)
    return member.read() if member is not None else b""


def _relative(markdown: str) -> list[str]:
    """Link and image targets a page on PyPI cannot follow."""
    outside_code = re.sub(r"```.*?```", "", markdown, flags=re.S)
    return [t for t in _LINK.findall(outside_code) if not t.startswith(_ABSOLUTE)]


def _twine(out: Path) -> list[str]:
    """``twine check --strict`` (metadata, and the README as PyPI renders it) of everything
    built, twine run by ``uvx`` from the package index."""
    files = sorted(str(p) for p in out.iterdir() if p.suffix in (".whl", ".gz"))
    done = subprocess.run(
        ["uvx", "--from", "twine>=6.1", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    if done.returncode == 0:
        return []
    lines = (done.stdout + done.stderr).splitlines()
    return [f"twine check: {line}" for line in lines if line.strip() and "PASSED" not in line]


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release.py", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("check", help="the sources agree with the version source")
    to = verbs.add_parser("sync", help="write the version everywhere it is derived")
    to.add_argument("version", nargs="?")
    make = verbs.add_parser("build", help="check, build every distribution, check them")
    make.add_argument("--out", type=Path, help="where to build (default: a new temporary folder)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.verb == "sync":
        release = args.version or version(root)
        if not re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", release):
            parser.error(f"not a release version: {release!r}")
        sync(root, release)
        _say(f"release: {release} written to {len(projects(root))} distributions")
        return 0
    problems = check_sources(root)
    if args.verb == "build" and not problems:
        out = args.out or Path(tempfile.mkdtemp(prefix="toolpass-release-"))
        problems = build(root, out)
        if not problems:
            _say(f"release: {version(root)}: every distribution built and checked in {out}")
    elif not problems:
        _say(f"release: {version(root)}: {len(projects(root))} distributions agree")
    for problem in problems:
        sys.stderr.write(f"release: {problem}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
