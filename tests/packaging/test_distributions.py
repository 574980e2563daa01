"""The distributions as users install them: built wheels, metadata, and the shared namespace.

Every distribution is built from its folder; core's wheel may require nothing outside its
extras, only core ships ``toolpass/__init__.py``, and a second distribution's
``toolpass.<name>`` imports beside core both from wheels and from editable installs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).resolve().parent / "probe"
DISTRIBUTIONS = sorted(
    [
        ROOT / "core",
        *(p.parent for p in ROOT.glob("adapters/*/pyproject.toml")),
        *(p.parent for p in ROOT.glob("packages/*/pyproject.toml")),
    ]
)
IMPORT_PROBE = (
    "import toolpass, toolpass.probe; "
    "assert toolpass.probe.secured_tool is toolpass.secured_tool; "
    "print(toolpass.__file__)"
)


def run(*cmd: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build(project: Path, out: Path) -> Path:
    run("uv", "build", "--wheel", "--out-dir", out, project)
    name = project.name if project != ROOT / "core" else "core"
    wheels = sorted(out.glob("*.whl"), key=os.path.getmtime)
    assert wheels, f"no wheel built for {name}"
    return wheels[-1]


def venv(path: Path) -> Path:
    run("uv", "venv", "-q", "--python", sys.executable, path)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    out = tmp_path_factory.mktemp("wheels")
    built = {}
    for project in [*DISTRIBUTIONS, PROBE]:
        before = set(out.glob("*.whl"))
        build(project, out)
        (wheel,) = set(out.glob("*.whl")) - before
        built[project] = wheel
    return built


def metadata(wheel: Path) -> tuple[list[str], list[str]]:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        msg = Parser().parsestr(z.read(meta).decode())
    return names, msg.get_all("Requires-Dist") or []


def test_core_wheel_requires_nothing_outside_extras(wheels: dict[Path, Path]) -> None:
    names, requires = metadata(wheels[ROOT / "core"])
    assert "toolpass/__init__.py" in names
    assert "toolpass/py.typed" in names
    unconditional = [r for r in requires if "extra ==" not in r]
    assert unconditional == []
    assert any(r.lower().startswith("pyyaml") for r in requires)


def test_only_core_ships_the_package_init(wheels: dict[Path, Path]) -> None:
    for project, wheel in wheels.items():
        names, requires = metadata(wheel)
        if project == ROOT / "core":
            continue
        assert "toolpass/__init__.py" not in names, f"{wheel.name} would overwrite the core API"
        assert not any(r.split()[0] == "toolpass" for r in requires), (
            f"{wheel.name} depends on plain 'toolpass', which is not ours"
        )


#: What each adapter may pull in beside toolpass-core: its own framework, nothing else's.
FRAMEWORKS = {
    "toolpass-langchain": {"langchain", "langchain-core", "langgraph"},
    "toolpass-openai-agents": {"openai-agents"},
    "toolpass-pydantic-ai": {"pydantic-ai-slim"},
    "toolpass-strands": {"strands-agents"},
    "toolpass-llamaindex": {"llama-index-core"},
    "toolpass-crewai": {"crewai"},
    "toolpass-google-adk": {"google-adk"},
    "toolpass-claude-agent-sdk": {"claude-agent-sdk"},
    "toolpass-mcp": {"mcp"},
}


def test_an_adapter_pulls_in_core_and_its_own_framework_only(wheels: dict[Path, Path]) -> None:
    adapters = {p.name: w for p, w in wheels.items() if p.parent.name == "adapters"}
    assert adapters, "no adapter was built"
    for folder, wheel in adapters.items():
        distribution = f"toolpass-{folder}"
        _, requires = metadata(wheel)
        names = {
            re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0].lower()
            for r in requires
            if "extra ==" not in r
        }
        assert names == {"toolpass-core"} | FRAMEWORKS[distribution], (distribution, names)
        floors = [r for r in requires if r.split()[0].lower() in FRAMEWORKS[distribution]]
        assert all(">=" in r for r in floors), f"{distribution}: no lower bound in {floors}"


def test_namespace_resolves_from_wheels(wheels: dict[Path, Path], tmp_path: Path) -> None:
    python = venv(tmp_path / "v")
    run("uv", "pip", "install", "-q", "--python", python, wheels[ROOT / "core"], wheels[PROBE])
    where = run(python, "-c", IMPORT_PROBE)
    assert "site-packages" in where


@pytest.mark.parametrize("editable", ["both", "core", "probe"])
def test_namespace_resolves_from_editable_installs(
    wheels: dict[Path, Path], tmp_path: Path, editable: str
) -> None:
    python = venv(tmp_path / "v")
    core = ["-e", ROOT / "core"] if editable in ("both", "core") else [wheels[ROOT / "core"]]
    probe = ["-e", PROBE] if editable in ("both", "probe") else [wheels[PROBE]]
    run("uv", "pip", "install", "-q", "--python", python, *core, *probe)
    where = run(python, "-c", IMPORT_PROBE)
    expected = "core/src/toolpass" if editable in ("both", "core") else "site-packages"
    assert expected in where
