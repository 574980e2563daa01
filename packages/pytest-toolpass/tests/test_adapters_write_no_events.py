"""No adapter writes an audit event by hand: the guard (``toolpass.adapting.Guard``: its
pipeline, ``who`` and ``refusing``) writes every call's one event, early refusals included,
so an adapter only translates. Read from the adapters' sources, as they are in the
repository."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ADAPTERS = Path(__file__).resolve().parents[3] / "adapters"
MODULES = sorted(ADAPTERS.glob("*/src/toolpass/*/**/*.py"))
#: What writes an event: the guard's former by-hand call, the sinks' writer, an event made.
WRITES = {"audit_refused", "emit", "AuditEvent"}
#: Where events are made and written: core's, never an adapter's.
INTERNALS = ("toolpass.outcome.audit", "toolpass.toolkit.one_event")


def _writes(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in WRITES or (name == "_refused" and _on_a_guard(func)):
                found.append(f"line {node.lineno}: calls {name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(INTERNALS):
            found.append(f"line {node.lineno}: imports {node.module}")
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: imports {a.name}"
                for a in node.names
                if a.name.startswith(INTERNALS)
            ]
    return found


def _on_a_guard(func: ast.expr) -> bool:
    """``guard._refused(...)``/``self.guard._refused(...)``: the guard's own writer."""
    owner = func.value if isinstance(func, ast.Attribute) else None
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return name == "guard"


def test_every_adapter_is_read() -> None:
    names = {m.relative_to(ADAPTERS).parts[0] for m in MODULES}
    assert len(names) == 9, names


@pytest.mark.parametrize("module", MODULES, ids=lambda m: str(m.relative_to(ADAPTERS)))
def test_no_adapter_writes_an_audit_event_by_hand(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
    assert _writes(tree) == [], f"{module.name} writes audit events itself: use Guard.refusing"


def test_the_check_finds_a_write_by_hand() -> None:
    source = "def f(guard, r):\n    guard.audit_refused(None, 't', {}, r)\n"
    assert _writes(ast.parse(source)) == ["line 2: calls audit_refused"]
    source = "from toolpass.outcome.audit import emit\nemit(e, s)\n"
    assert _writes(ast.parse(source)) == [
        "line 1: imports toolpass.outcome.audit",
        "line 2: calls emit",
    ]
