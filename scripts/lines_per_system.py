"""Lines per system: each system's wheel modules (integrations/<name>/*.py without fake.py,
generate.py and tests/), split by AST, approximately, into

- declarations: the module's and class's docstrings, imports, constants, keys, description;
- classification: ``match_request`` and what only it calls;
- checks: ``check`` and what it calls;
- wiring: ``probe``, ``lookup_*``, ``auth_headers``, ``error_detail``, ``validate``,
  ``__init__``, ``secret_values`` (and the rest of the wire hooks) and what only they call;
- other: functions none of these reaches.

A function is placed by the roots that reach it through the names its body mentions (a
name, or an attribute such as ``self._user``), across the system's modules; the blank lines
and comments before a definition count with it. The shared modules (the kit, the base
class, the shared modules of several systems) are listed apart. Usage:
``python3 scripts/lines_per_system.py [--markdown]``.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "core/src/toolpass/integrations"
COLUMNS = ("declarations", "classification", "checks", "wiring", "other")
WIRING = {
    "probe",
    "auth_headers",
    "error_detail",
    "validate",
    "__init__",
    "secret_values",
    "accept",
    "serves",
    "cache_scope",
    "lookup_user",
    "user_id",
    "net",
}
GENERIC = set(dir(dict)) | set(dir(list)) | set(dir(str)) | set(dir(set)) | set(dir(object))
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def modules(system: Path) -> list[Path]:
    """A system's wheel modules."""
    return sorted(
        p for p in system.rglob("*.py") if "tests" not in p.relative_to(system).parts
        and p.name not in ("fake.py", "generate.py")
    )  # fmt: skip


def spans(body: list[ast.stmt], start: int) -> Iterator[tuple[ast.stmt, int, int]]:
    """Each statement of ``body`` with its lines, the gap before it (blank lines,
    comments) included; the first begins at ``start``."""
    for node in body:
        end = node.end_lineno or node.lineno
        yield node, start, end
        start = end + 1


def mentioned(node: ast.AST) -> set[str]:
    """The names a definition's body mentions: bare names and attribute names, but for the
    methods of built-in containers (``x.get``: a dict's, not the system's own ``get``)
    unless asked of ``self`` or ``cls``."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            mine = isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls")
            if mine or sub.attr not in GENERIC:
                found.add(sub.attr)
    return found


class Tally:
    """The definitions of a set of modules, their lines and what each mentions."""

    def __init__(self) -> None:
        self.lines: dict[str, int] = defaultdict(int)  # a definition's name -> its lines
        self.mentions: dict[str, set[str]] = defaultdict(set)
        self.named: dict[str, set[str]] = defaultdict(set)  # a short name -> its definitions
        self.declared = 0

    def read(self, path: Path) -> int:
        """Tally one module; its number of lines."""
        text = path.read_text("utf-8")
        total = len(text.splitlines())
        tree = ast.parse(text)
        last = 0
        for node, start, end in spans(tree.body, 1):
            self.place(node, start, end)
            last = end
        self.declared += total - last
        return total

    def place(self, node: ast.stmt, start: int, end: int, owner: str = "") -> None:
        if isinstance(node, ast.ClassDef) and any(isinstance(b, FUNCTIONS) for b in node.body):
            for member, m_start, m_end in spans(node.body, start):
                self.place(member, m_start, m_end, node.name)
            self.declared += end - (node.body[-1].end_lineno or end)
            # a helper class used by a check reaches its methods; the system's own class
            # (it has a ``check``) is reached method by method
            methods = {m.name for m in node.body if isinstance(m, FUNCTIONS)}
            self.define(node.name, 0, node.decorator_list)
            if not methods & {"check", "match_request"}:
                self.mentions[node.name] |= methods
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.define(f"{owner}.{node.name}" if owner else node.name, end - start + 1, node)
        else:
            self.declared += end - start + 1

    def define(self, key: str, lines: int, node: ast.AST | list[ast.expr]) -> None:
        self.lines[key] += lines
        self.named[key.rpartition(".")[2]].add(key)
        for part in node if isinstance(node, list) else [node]:
            self.mentions[key] |= mentioned(part)

    def reached(self, roots: Iterable[str]) -> set[str]:
        """The definitions (``Class.method`` or ``function``) the short names ``roots``
        reach."""
        seen: set[str] = set()
        todo = [key for root in roots for key in self.named.get(root, ())]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            short = key.rpartition(".")[2]
            todo.extend(k for n in self.mentions[key] - {short} for k in self.named.get(n, ()))
        return seen

    def split(self) -> dict[str, int]:
        """Lines per column."""
        names = set(self.lines)
        checks = self.reached(["check"])
        classification = self.reached(["match_request"]) - checks
        wiring_roots = [n for n in self.named if n in WIRING or n.startswith("lookup_")]
        wiring = self.reached(wiring_roots) - checks - classification
        other = names - checks - classification - wiring
        out = {"declarations": self.declared}
        for column, group in (
            ("classification", classification),
            ("checks", checks),
            ("wiring", wiring),
            ("other", other),
        ):
            out[column] = sum(self.lines[n] for n in group)
        return out


def measure(paths: list[Path]) -> tuple[int, dict[str, int]]:
    tally = Tally()
    total = sum(tally.read(p) for p in paths)
    return total, tally.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    rows: list[tuple[str, int, dict[str, int]]] = []
    for system in sorted(p for p in HERE.iterdir() if (p / "__init__.py").exists()):
        if system.name.startswith("_"):
            continue
        total, split = measure(modules(system))
        rows.append((system.name, total, split))
    rows.sort(key=lambda r: r[1])
    shared = [(p.stem, *measure([p])) for p in sorted(HERE.glob("*.py")) if p.name != "__init__.py"]
    show(rows, shared, args.markdown)


Row = tuple[str, int, dict[str, int]]


def show(rows: list[Row], shared: list[Row], markdown: bool) -> None:
    """The table of systems, their median, then the shared modules."""
    widths = (18, 6, 12, 14, 6, 6, 5)

    def row(*cells: object) -> str:
        padded = [str(c).rjust(w) for c, w in zip(cells, widths, strict=True)]
        padded[0] = str(cells[0]).ljust(widths[0])
        return f"| {' | '.join(padded)} |" if markdown else "  ".join(padded)

    def table(title: str, found: list[Row]) -> list[str]:
        out = [row(title, "lines", *COLUMNS)]
        if markdown:
            out.append(row(*("-" * w for w in widths)))
        return out + [
            row(name, total, *(split[c] for c in COLUMNS)) for name, total, split in found
        ]

    middle = [int(statistics.median(r[2][c] for r in rows)) for c in COLUMNS]
    median = row("median", int(statistics.median(r[1] for r in rows)), *middle)
    lines = [*table("system", rows), median, "", *table("shared module", shared)]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
