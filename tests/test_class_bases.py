"""No class in controller/ has more than one base class defined in the project (no
mixins: a part of the table is a collaborator it holds, never a base it is built
from), and nothing inherits the table's saved state (the table holds one, as a field).

Read from the source (the AST), like tests/test_import_cycles.py: a base named
through an import is followed to the module that defines it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.test_import_cycles import project_modules

ClassRef = tuple[str, str]  # (module, class name)
SAVED_STATE: ClassRef = ("controller.table.state", "SavedState")


def _names_in_scope(tree: ast.Module, module: str, is_package: bool,
                    classes: set[ClassRef], modules: set[str]) -> dict[str, ClassRef | str]:
    """What each top-level name of a module refers to: a project class, or a project module."""
    scope: dict[str, ClassRef | str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                local = alias.asname or alias.name
                if (source, alias.name) in classes:
                    scope[local] = (source, alias.name)
                elif f"{source}.{alias.name}" in modules:
                    scope[local] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    scope[alias.asname or alias.name.split(".")[0]] = \
                        alias.name if alias.asname else alias.name.split(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            scope[node.name] = (module, node.name)
    return scope


def _resolve(expr: ast.expr, scope: dict[str, ClassRef | str],
             classes: set[ClassRef]) -> ClassRef | None:
    """The project class a base expression names, if it names one."""
    if isinstance(expr, ast.Subscript):  # Generic[T], SomeBase[int]
        return _resolve(expr.value, scope, classes)
    if isinstance(expr, ast.Name):
        found = scope.get(expr.id)
        return found if isinstance(found, tuple) else None
    if isinstance(expr, ast.Attribute):
        parts: list[str] = [expr.attr]
        inner: ast.expr = expr.value
        while isinstance(inner, ast.Attribute):
            parts.insert(0, inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and isinstance(scope.get(inner.id), str):
            dotted = ".".join([str(scope[inner.id]), *parts])
            module, _, name = dotted.rpartition(".")
            return (module, name) if (module, name) in classes else None
    return None


def class_bases(sources: dict[str, tuple[str, bool]]) -> dict[ClassRef, list[ClassRef]]:
    """Every class of `sources` (module -> (text, is_package)) with its project bases."""
    trees = {name: ast.parse(text) for name, (text, _) in sources.items()}
    classes = {(name, node.name) for name, tree in trees.items()
               for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    bases: dict[ClassRef, list[ClassRef]] = {}
    for name, tree in trees.items():
        scope = _names_in_scope(tree, name, sources[name][1], classes, set(sources))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found = [_resolve(b, scope, classes) for b in node.bases]
                bases[(name, node.name)] = [b for b in found if b is not None]
    return bases


def _ancestors(ref: ClassRef, bases: dict[ClassRef, list[ClassRef]]) -> Iterator[ClassRef]:
    for base in bases.get(ref, []):
        yield base
        yield from _ancestors(base, bases)


def _project_sources() -> dict[str, tuple[str, bool]]:
    return {name: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for name, path in project_modules().items()}


def test_the_checker_sees_two_project_bases_through_imports_and_attributes() -> None:
    sources = {
        "pkg.a": ("class A:\n    pass\n", False),
        "pkg.b": ("from pkg.a import A\nclass B:\n    pass\n", False),
        "pkg.c": ("import pkg.a as mod\nfrom pkg.b import B\nfrom typing import Generic\n"
                  "class C(mod.A, B, Generic[int]):\n    pass\n"
                  "class D(Exception):\n    pass\n", False),
    }
    bases = class_bases(sources)
    assert bases[("pkg.c", "C")] == [("pkg.a", "A"), ("pkg.b", "B")]
    assert bases[("pkg.c", "D")] == []
    assert list(_ancestors(("pkg.c", "C"), bases)) == [("pkg.a", "A"), ("pkg.b", "B")]


def test_no_class_in_the_controller_has_two_project_bases() -> None:
    bases = class_bases(_project_sources())
    mixed = sorted(f"{module}.{name}: {', '.join(f'{m}.{n}' for m, n in found)}"
                   for (module, name), found in bases.items()
                   if module.split(".")[0] == "controller" and len(found) > 1)
    assert mixed == [], "compose instead (hold the part as a field): " + "; ".join(mixed)


def test_nothing_inherits_the_saved_state() -> None:
    bases = class_bases(_project_sources())
    assert SAVED_STATE in bases, "the saved state moved: update SAVED_STATE"
    heirs = sorted(f"{m}.{n}" for m, n in bases if SAVED_STATE in _ancestors((m, n), bases))
    assert heirs == [], "the table holds its saved state as a field (Table.saved)"
