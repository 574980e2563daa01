"""What an action needs is declared in its system's ``actions.json`` and read by the check:
no system's code compares the action it is asked about with one of its action names."""

from __future__ import annotations

import ast
from pathlib import Path

import toolpass.integrations as integrations
from toolpass.integrations.base import load_actions

ROOT = Path(integrations.__file__).parent
#: Not checks: a fake and a generator ship nothing; a hook turns a request into an action by
#: the API's own rules (Kubernetes: a list with ?watch=true is the watch verb).
NOT_CHECKS = ("fake.py", "generate.py", "_hook.py")


def systems() -> list[Path]:
    return sorted(p.parent for p in ROOT.glob("*/actions.json"))


def literal_names(node: ast.expr) -> set[str]:
    """The strings a comparison's side spells out: a string, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(literal_names(e) for e in node.elts)) if node.elts else set()
    return set()


def named_sets(tree: ast.Module, declared: set[str]) -> set[str]:
    """The module's constants that spell out action names (``_EXEMPT = frozenset({...})``)."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Call) and value.args:
                value = value.args[0]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if literal_names(value) & declared:
                found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def keyed_on_action_names(folder: Path) -> list[str]:
    """Where the system's checks compare the asked ``action`` with its declared names,
    spelled out or through a module constant."""
    declared = {a.name for a in load_actions(f"toolpass.integrations.{folder.name}")}
    found = []
    for module in sorted(folder.glob("*.py")):
        if module.name in NOT_CHECKS:
            continue
        tree = ast.parse(module.read_text(), str(module))
        constants = named_sets(tree, declared)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if not any(isinstance(s, ast.Name) and s.id == "action" for s in sides):
                continue
            named = any(isinstance(s, ast.Name) and s.id in constants for s in sides)
            if named or any(literal_names(s) & declared for s in sides):
                found.append(f"{module.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_check_is_keyed_on_an_action_name() -> None:
    keyed = {folder.name: keyed_on_action_names(folder) for folder in systems()}
    assert {name: where for name, where in keyed.items() if where} == {}


def test_the_scan_finds_a_comparison_with_an_action_name() -> None:
    tree = ast.parse(
        '_EXEMPT = frozenset({"a.b", "x"})\n'
        'if action in ("a.b", "c") or action == "x.y" or action in _EXEMPT:\n    pass\n'
    )
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    spelled = [literal_names(c.comparators[0]) for c in compares]
    assert spelled == [{"a.b", "c"}, {"x.y"}, set()]
    assert named_sets(tree, {"a.b"}) == {"_EXEMPT"}
