"""No import cycle between the project's modules, and no layer imports upwards.

The graph is read from the source (the AST), not from what Python happened to
import, and it counts every import statement: those inside functions and under
`if TYPE_CHECKING:` too, because an import moved into a function to dodge a
cycle still makes the two modules depend on each other. Importing `a.b.c`
also runs the packages `a` and `a.b`, so those are edges as well.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cards", "firmware_bridge", "drivers", "controller", "hil")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target
            for alias in node.names:  # `from pkg import submodule`
                yield f"{target}.{alias.name}"


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target in _imported_names(tree, name, path.name == "__init__.py"):
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # the module and every package above it
                dep = ".".join(parts[:i])
                if dep in modules and dep != name and not name.startswith(dep + "."):
                    graph[name].add(dep)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components with more than one module are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from controller.rules import par\n")
    assert set(_imported_names(tree, "x", False)) == {"controller.rules",
                                                       "controller.rules.par"}


def test_no_import_cycle_between_the_project_modules() -> None:
    cycles = strongly_connected(import_graph())
    assert cycles == [], "import cycles (break them; do not hide them in a function): " + \
        "; ".join(" <-> ".join(c) for c in cycles)


def test_lower_layers_import_nothing_from_the_controller() -> None:
    """cards knows nothing of the project; drivers and firmware_bridge know no controller."""
    graph = import_graph()
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        for dep in deps
        if (module.split(".")[0] in ("drivers", "firmware_bridge")
            and dep.split(".")[0] in ("controller", "hil"))
        or (module.split(".")[0] == "cards" and dep.split(".")[0] != "cards"))
    assert wrong == []
