"""``scripts/release.py``: every distribution built (wheel and sdist) and checked, from one
version source; a disagreement, a missing LICENSE or a bare ``toolpass-core`` fails it."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "release.py"
PROBE = Path(__file__).resolve().parent / "probe"


def release(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, argv)], capture_output=True, text=True
    )


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["release"] = module
    spec.loader.exec_module(module)
    return module


def test_every_distribution_builds_and_passes_the_release_checks(tmp_path: Path) -> None:
    done = release("build", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    built = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    projects = script().projects(ROOT)
    assert len(built) == 2 * len(projects) == 24, built  # a wheel and an sdist each
    assert sum(name.endswith(".tar.gz") for name in built) == len(projects)


def test_the_sources_agree_with_the_one_version_source() -> None:
    done = release("check")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    version = script().version(ROOT)
    for pyproject in ROOT.glob("*/*/pyproject.toml"):
        if pyproject.parent.parent.name not in ("adapters", "packages"):
            continue
        meta = tomllib.loads(pyproject.read_text())["project"]
        for requirement in meta["dependencies"]:
            if requirement.startswith("toolpass-core"):
                assert requirement.endswith(f">={version},<0.2"), pyproject


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The files the release checks read, of every distribution, in a folder of their own."""
    module = script()
    shutil.copyfile(ROOT / "LICENSE", tmp_path / "LICENSE")
    for project in module.projects(ROOT):
        copy = tmp_path / project.relative_to(ROOT)
        copy.mkdir(parents=True)
        for name in ("pyproject.toml", "LICENSE"):
            shutil.copyfile(project / name, copy / name)
        version_file = module._version_file(project)
        if version_file is not None:
            target = copy / version_file.relative_to(project)
            target.parent.mkdir(parents=True)
            shutil.copyfile(version_file, target)
    return tmp_path


def test_a_disagreement_is_named_and_sync_mends_it(checkout: Path) -> None:
    langchain = checkout / "adapters" / "langchain" / "pyproject.toml"
    langchain.write_text(
        re.sub(r'"toolpass-core[^"]*"', '"toolpass-core"', langchain.read_text()).replace(
            'version = "0.1.0"', 'version = "0.0.9"'
        )
    )
    (checkout / "adapters" / "mcp" / "LICENSE").write_text("MIT License\n")
    server = checkout / "packages" / "server" / "pyproject.toml"
    server.write_text(server.read_text().replace('license-files = ["LICENSE"]\n', ""))
    done = release("--root", checkout, "check")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "release: adapters/langchain/pyproject.toml: version '0.0.9', not '0.1.0'",
        "release: adapters/langchain/pyproject.toml: 'toolpass-core' is not "
        "toolpass-core>=0.1.0,<0.2",
        "release: adapters/mcp/LICENSE: not the root LICENSE (run sync)",
        "release: packages/server/pyproject.toml: no license-files",
    ]
    server.write_text(
        server.read_text().replace("license = ", 'license-files = ["LICENSE"]\nlicense = ')
    )
    assert release("--root", checkout, "sync", "0.2.0").returncode == 0
    assert release("--root", checkout, "check").returncode == 0
    assert '"toolpass-core>=0.2.0,<0.3"' in langchain.read_text()
    assert 'version = "0.2.0"' in langchain.read_text()
    assert '__version__ = "0.2.0"' in (checkout / "core/src/toolpass/_version.py").read_text()


def test_a_distribution_without_the_release_metadata_is_refused(tmp_path: Path) -> None:
    """The probe distribution has none of it: each missing piece is named."""
    done = subprocess.run(
        ["uv", "build", "-q", "--wheel", "--out-dir", str(tmp_path), str(PROBE)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("*.whl")
    problems = script().check_built(wheel, "0.0.1")
    assert "no License-Expression: Apache-2.0" in problems
    assert "no LICENSE file with the Apache-2.0 text" in problems
    assert "no Project-URL" in problems
    assert "'toolpass-core' does not pin toolpass-core>=0.0.1,<0.1" in problems
    assert "classifier 'Programming Language :: Python :: 3.10' missing" in problems


def test_a_wheel_shipping_tests_fakes_or_generators_is_refused(tmp_path: Path) -> None:
    """What only a source checkout needs (a system's tests, fake, route generator) is named."""
    probe = shutil.copytree(PROBE, tmp_path / "probe")
    package = probe / "src/toolpass/probe"
    (package / "tests").mkdir()
    for name in ("tests/__init__.py", "tests/test_probe.py", "fake.py", "generate.py"):
        (package / name).write_text("")
    done = subprocess.run(
        ["uv", "build", "-q", "--wheel", "--out-dir", str(tmp_path / "out"), str(probe)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "out").glob("*.whl")
    shipped = [p for p in script().check_built(wheel, "0.0.1") if p.startswith("ships ")]
    assert sorted(shipped) == [
        f"ships toolpass/probe/{name}, which only a source checkout needs"
        for name in ("fake.py", "generate.py", "tests/__init__.py", "tests/test_probe.py")
    ]


@pytest.mark.parametrize(
    ("release_version", "wanted"),
    [("0.1.0", ">=0.1.0,<0.2"), ("0.9.3", ">=0.9.3,<0.10"), ("1.2.0", ">=1.2.0,<2")],
)
def test_adapters_take_the_releases_of_core_that_keep_its_api(
    release_version: str, wanted: str
) -> None:
    assert script().core_range(release_version) == wanted


def test_a_relative_readme_link_is_caught() -> None:
    found = script()._relative(
        "[docs](docs/README.md) [ok](https://x.org) [a](#b)\n```\n[c](d)\n```"
    )
    assert found == ["docs/README.md"]
