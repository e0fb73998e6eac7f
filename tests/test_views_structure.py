"""The views' objects are composed, not mixed, and the app declares what it holds (issue 35).

Read from the source (no import): a class of ``edgetui/views`` has one base class (a Protocol may
combine Protocols); the app's attributes are all set in ``EdgeTUIApp.__init__``, never read back
with ``getattr(self, …)``, and no view sets an attribute on the app that the app does not declare.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIEWS = ROOT / "edgetui" / "views"


LIVE = ROOT / "edgetui" / "live"


def _views_trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(VIEWS.rglob("*.py"))]


def _live_trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(LIVE.rglob("*.py"))]


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def _app_class() -> ast.ClassDef:
    tree = ast.parse((VIEWS / "app.py").read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EdgeTUIApp")


def _self_attrs_set(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for t in targets:
            for el in t.elts if isinstance(t, ast.Tuple) else [t]:
                if isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name) and el.value.id == "self":
                    names.add(el.attr)
    return names


def test_no_view_or_live_class_is_built_from_mixins():
    """Every class under edgetui/views and edgetui/live (the supervisor and its parts) has a single base (keywords such as ``can_focus`` aside); only a
    Protocol may list several, the others Protocols too."""
    mixed = []
    for path, tree in _views_trees() + _live_trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and len(node.bases) > 1:
                names = [_base_name(b) for b in node.bases]
                if "Protocol" not in names:
                    mixed.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}({', '.join(names)})")
    assert mixed == [], "\n".join(mixed)


def test_the_app_declares_every_attribute_in_its_init():
    """``EdgeTUIApp`` sets no attribute of its own outside ``__init__`` that ``__init__`` did not
    declare, and reads none back with ``getattr(self, …)``."""
    cls = _app_class()
    init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    declared = _self_attrs_set(init)
    late = []
    for f in cls.body:
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name != "__init__":
            # (Textual's own private state, set by the one exception handler, is Textual's to declare)
            late += [
                f"{f.name}: self.{a}"
                for a in sorted(_self_attrs_set(f) - declared)
                if a not in ("_return_code", "_exception")
            ]
    read_back = [
        f"line {n.lineno}: {ast.unparse(n)}"
        for n in ast.walk(cls)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ("getattr", "hasattr", "setattr")
        and n.args
        and isinstance(n.args[0], ast.Name)
        and n.args[0].id == "self"
    ]
    assert late == [] and read_back == [], "\n".join(late + read_back)


def test_no_view_sets_an_attribute_the_app_does_not_declare():
    """A screen or widget that keeps something on the app (``self.app.x = …``, ``app.x = …``,
    ``setattr(self.app, …)``) keeps it in an attribute ``EdgeTUIApp.__init__`` declares."""
    init = next(f for f in _app_class().body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    declared = _self_attrs_set(init)

    def is_app(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id == "app") or (
            isinstance(node, ast.Attribute) and node.attr == "app"
        )

    undeclared = []
    for path, tree in _views_trees():
        if path.name == "app.py":
            continue
        for node in ast.walk(tree):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AnnAssign, ast.AugAssign))
                else []
            )
            for t in targets:
                if isinstance(t, ast.Attribute) and is_app(t.value) and t.attr not in declared:
                    undeclared.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(t)}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                if node.args and is_app(node.args[0]):
                    undeclared.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert undeclared == [], "\n".join(undeclared)
