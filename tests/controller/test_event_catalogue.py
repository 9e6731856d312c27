"""Event kinds are data: what the code emits and `controller.events.CATALOGUE` agree exactly.

The emitted kinds are read from the source: every call of the table's `Journal.record`
or the store's `append_event` names its kind as a string literal (or a module
constant holding one), so this test sees every kind without running every path.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from controller.events import CATALOGUE, DOC, KINDS, SHOE_CARD_KINDS, document

ROOT = Path(__file__).parents[2]
# Every event reaches the store through these (the table's through `Journal.record`).
EMITTERS = frozenset({"_record", "record", "append_event"})


@dataclass(frozen=True)
class Emission:
    kind: str
    where: str
    fields: tuple[str, ...]
    severity: str


def _constants(trees: dict[Path, ast.Module]) -> dict[str, str]:
    """Module-level NAME = "text" across the package (event kind constants)."""
    found: dict[str, str] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value.value
    return found


def _kinds(arg: ast.expr, constants: dict[str, str]) -> list[str] | None:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.Name) and arg.id in constants:
        return [constants[arg.id]]
    if isinstance(arg, ast.IfExp):
        body, orelse = _kinds(arg.body, constants), _kinds(arg.orelse, constants)
        return body + orelse if body is not None and orelse is not None else None
    return None


def emissions() -> tuple[list[Emission], list[str]]:
    """Every kind the code under controller/ emits, and the calls whose kind is not a literal."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8"))
             for p in sorted((ROOT / "controller").rglob("*.py"))}
    constants = _constants(trees)
    found: list[Emission] = []
    unreadable: list[str] = []
    for path, tree in trees.items():
        for func, call in _calls(tree):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else \
                getattr(call.func, "id", None)
            if name not in EMITTERS or not call.args:
                continue
            where = f"{path.relative_to(ROOT)}:{call.lineno}"
            arg = call.args[0]
            if isinstance(arg, ast.Name) and func is not None and arg.id in {
                    a.arg for a in func.args.args + func.args.kwonlyargs}:
                continue  # a wrapper passing its own `kind` parameter on
            kinds = _kinds(arg, constants)
            if kinds is None:
                unreadable.append(f"{where}: {ast.unparse(arg)}")
                continue
            payload = call.args[1] if len(call.args) > 1 else None
            fields = tuple(k.value for k in payload.keys if isinstance(k, ast.Constant)) \
                if isinstance(payload, ast.Dict) else ()
            severity = next((kw.value.value for kw in call.keywords if kw.arg == "severity"
                             and isinstance(kw.value, ast.Constant)), "info")
            found += [Emission(kind, where, fields, severity) for kind in kinds]
    return found, unreadable


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _calls(tree: ast.Module) -> Iterator[tuple[Function | None, ast.Call]]:
    def walk(node: ast.AST, func: Function | None) -> Iterator[tuple[Function | None, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            if isinstance(child, ast.Call):
                yield func, child
            yield from walk(child, inner)
    yield from walk(tree, None)


def test_every_emitted_event_kind_is_in_the_catalogue():
    found, _ = emissions()
    missing = {}
    for e in found:
        if e.kind not in KINDS:
            missing.setdefault(e.kind, e)
    lines = [f'    E("{e.kind}", "{e.severity}", "-", {e.fields!r}, "what it means"),'
             f"  # emitted at {e.where}" for e in missing.values()]
    assert not missing, ("event kinds emitted but not in controller/events.py CATALOGUE; "
                         "add these entries (fix device and meaning), then run "
                         "`python -m controller.events --write`:\n" + "\n".join(lines))


def test_every_catalogued_event_kind_is_emitted():
    emitted = {e.kind for e in emissions()[0]}
    unused = [e.kind for e in CATALOGUE if e.kind not in emitted]
    assert not unused, ("controller/events.py CATALOGUE lists kinds nothing emits; remove "
                        f"their entries (or emit them): {', '.join(unused)}")


def test_event_kinds_are_written_so_the_catalogue_test_can_read_them():
    _, unreadable = emissions()
    assert not unreadable, ("name each event kind with a string literal (or a module "
                            "constant, or `a if c else b` of literals):\n" + "\n".join(unreadable))


def test_the_catalogue_lists_each_kind_once_with_a_known_severity():
    assert len(KINDS) == len(CATALOGUE)
    severities = {"info", "warning", "error", "critical"}
    assert [e.kind for e in CATALOGUE
            if not set(e.severity.split(" / ")) <= severities] == []
    assert SHOE_CARD_KINDS == {"burn_first_card", "burn_card", "card", "card_face_up",
                               "card_discarded"}


def test_the_control_api_event_table_is_generated_from_the_catalogue():
    text = DOC.read_text(encoding="utf-8")
    assert text == document(text), "regenerate: python -m controller.events --write"
