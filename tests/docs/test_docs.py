"""The documentation site (docs/, built by ``mkdocs build --strict``) says what toolpass does.

Every fenced ``python`` block of every page runs as written, each in a fresh interpreter, and
every ``yaml`` block passes ``toolpass validate``. A comment on the line before a block says
what it is:

- ``<!-- illustration -->``: a fragment that cannot run alone (it names the reader's agent,
  model or tools); these are counted, so none is added unnoticed;
- ``<!-- file: NAME -->``: the block is also written to NAME in the folder where the page's
  python blocks run (``toolpass.yaml``, for one that loads it);
- ``<!-- requires: a, b -->``: the block needs those modules; skipped only where one is
  absent.

A block holding only ``--8<-- "PATH"`` lines includes those files when the site is built
(the examples, which each adapter's nox session runs): the files must exist. Blocks run with
no network, in a temporary folder, with each ``env:NAME`` (``env("NAME")``,
``os.environ["NAME"]``) the page names set to a
placeholder secret (``env:TOOLPASS_STORE``: a SQLite store in that folder): the engine's
look-ups fail there, so its decisions are ``unknown``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The illustrations (fragments that cannot run alone) the site holds, counted.
ILLUSTRATIONS = {"python": 1, "yaml": 1}
BLOCK = re.compile(
    r"^(?:<!-- (?P<mark>illustration|file: [\w.-]+|requires: [^>]+?) -->\n)?"
    r"```(?P<lang>\w+)\n(?P<code>.*?)^```$",
    re.S | re.M,
)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')
ENV = re.compile(r"""(?:env:|env\(["']|environ\[["'])([A-Z][A-Z0-9_]*)""")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    mark: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def includes(self) -> list[str] | None:
        """The files a snippet-only block includes, or None for a block of its own code."""
        lines = self.code.strip().splitlines()
        found = [INCLUDE.match(line.strip()) for line in lines]
        return [m[1] for m in found if m] if lines and all(found) else None


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, text.count("\n", 0, m.start("code")) + 1, m["lang"], m["mark"] or "", m["code"])
        for m in BLOCK.finditer(text)
    ]


ALL = [b for page in pages() for b in blocks(page)]
RUNNABLE = [
    b for b in ALL if b.lang == "python" and b.mark != "illustration" and b.includes is None
]
CONFIGS = [b for b in ALL if b.lang == "yaml" and b.mark != "illustration"]


def placeholders(folder: Path, *texts: str) -> dict[str, str]:
    """The environment a block runs in: each ``env:NAME`` it names set to a placeholder
    secret, ``TOOLPASS_STORE`` to a SQLite store in ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "TOOLPASS_"))}
    env["LANGSMITH_TRACING"] = "false"
    for name in {n for text in texts for n in ENV.findall(text)}:
        env[name] = f"placeholder-{name.lower()}-" + "x" * 32
    env["TOOLPASS_STORE"] = f"sqlite:///{folder}/state.db"
    return env


def write_files(page: Path, folder: Path) -> str:
    """Write the page's ``<!-- file: NAME -->`` blocks into ``folder``; their text."""
    written = [b for b in blocks(page) if b.mark.startswith("file: ")]
    for block in written:
        (folder / block.mark.removeprefix("file: ")).write_text(block.code)
    return "".join(b.code for b in written)


def test_the_site_has_pages_and_blocks_of_each_kind() -> None:
    assert len(pages()) >= 38
    assert len(RUNNABLE) >= 10
    assert len(CONFIGS) >= 4


def test_the_illustrations_are_marked_and_counted() -> None:
    counted = {
        lang: sum(b.lang == lang and b.mark == "illustration" for b in ALL)
        for lang in ILLUSTRATIONS
    }
    assert counted == ILLUSTRATIONS, "update ILLUSTRATIONS only for a block that cannot run"
    unknown = sorted({b.lang for b in ALL} - {"python", "yaml", "sh", "text", "http", "json"})
    assert not unknown, f"code blocks of a language this test does not check: {unknown}"


def test_every_included_file_exists() -> None:
    included = [(b.where, path) for b in ALL for path in b.includes or ()]
    assert included, "the adapter pages include their examples"
    missing = [(where, path) for where, path in included if not (ROOT / path).is_file()]
    assert not missing


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_the_python_block_runs_as_written(tmp_path: Path, block: Block) -> None:
    if block.mark.startswith("requires: "):
        for module in block.mark.removeprefix("requires: ").split(","):
            if importlib.util.find_spec(module.strip()) is None:
                pytest.skip(f"needs {module.strip()}")
    files = write_files(block.page, tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=placeholders(tmp_path, files, block.code),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{block.where}:\n{block.code}\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("block", CONFIGS, ids=lambda b: b.where)
def test_the_yaml_block_passes_toolpass_validate(
    tmp_path: Path,
    block: Block,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from toolpass.cli import main  # `toolpass validate`, in this process: no import per block

    config = tmp_path / "toolpass.yaml"
    config.write_text(block.code)
    for name, value in placeholders(tmp_path, block.code).items():
        monkeypatch.setenv(name, value)
    status = main(["validate", "-config", str(config)])
    said = capsys.readouterr()
    assert status == 0, f"{block.where}:\n{block.code}\n{said.out}{said.err}"
    assert "not checked" not in said.out + said.err, said.out + said.err


def commands(*under: str) -> list[str]:
    """The subcommands ``toolpass [UNDER] --help`` lists."""
    done = subprocess.run(
        [sys.executable, "-m", "toolpass.cli", *under, "--help"], capture_output=True, text=True
    )
    found = re.search(r"\{([a-z,-]+)\}", done.stdout)
    assert found, done.stdout + done.stderr
    return [" ".join((*under, name)) for name in found[1].split(",")]


def test_the_cli_page_shows_the_usage_of_every_command() -> None:
    every = [c for c in commands() if c != "audit"] + commands("audit")
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    shown = re.findall(r"<!-- usage: ([a-z -]+?) -->", page)
    assert sorted(shown) == sorted(every)
    for command in every:
        assert f"## `toolpass {command}`" in page or f"### `toolpass {command}`" in page


def test_every_adapter_and_system_has_a_page_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    adapters = sorted(p.parent.name for p in ROOT.glob("adapters/*/pyproject.toml"))
    for name in adapters:
        assert f"adapters/{name}.md" in nav, name
        assert (DOCS / "adapters" / f"{name}.md").is_file(), name
    systems = sorted(p.stem for p in (DOCS / "permissions").glob("*.md") if p.stem != "README")
    listed = subprocess.run(
        [sys.executable, "-m", "toolpass.cli", "catalog"], capture_output=True, text=True
    ).stdout
    integrations = sorted(re.findall(r"^([a-z0-9_]+) ", listed, re.M))
    assert len(integrations) >= 22
    assert systems == integrations  # one page per integration `toolpass catalog` lists
    for name in systems:
        assert f"permissions/{name}.md" in nav, name


#: The comments a page may hold: the marks above, and what docs/hooks.py fills in.
MARKS = re.compile(
    r"<!-- (illustration|file: [\w.-]+|requires: [^>]+|usage: [a-z -]+|server-keys"
    r"|connection-keys|readme-section: [^>]+) -->"
)


def test_every_comment_is_a_known_mark() -> None:
    unknown = [
        f"{page.relative_to(ROOT)}: {comment}"
        for page in pages()
        for comment in re.findall(r"<!--.*?-->", page.read_text(encoding="utf-8"), re.S)
        if not MARKS.fullmatch(comment)
    ]
    assert not unknown, "a misspelled mark is left as an invisible comment"
