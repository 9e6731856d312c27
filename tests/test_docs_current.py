"""Generated documents stay in step with what generates them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _compliance_tool():
    spec = importlib.util.spec_from_file_location("compliance_tool", ROOT / "tools" / "compliance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_compliance_matrix_matches_the_tests_citations():
    """The matrix is rebuilt from the in-repository regulation index: nothing outside is read."""
    result = subprocess.run([sys.executable, "tools/compliance.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, ("docs/compliance.md is stale: run "
                                    ".venv/bin/python tools/compliance.py\n" + result.stdout
                                    + result.stderr)


def test_the_regulation_index_holds_every_chapter_in_document_order():
    tool = _compliance_tool()
    chapters = tool.read_index(tool.INDEX.read_text(encoding="utf-8"))
    assert {chapter: len(clauses) for chapter, clauses in chapters.items()} == {
        "631a": 151, "631c": 99, "627b": 144, "681a": 121}
    # Ids are compared without their chapter prefix: written whole they would be citations,
    # and this test checks the index, not the clauses.
    within = {chapter: [clause.cid.split(".", 1)[1] for clause in clauses]
              for chapter, clauses in chapters.items()}
    assert within["631a"][:4] == ["1", "2", "2(a)", "2(b)"]
    third_card = chapters["631a"][within["631a"].index("11(c)(2)(iii)")]
    assert (third_card.depth, third_card.title) == (3, "")
    assert [(c.depth, c.title) for c in chapters["681a"][:2]] == [
        (0, "Definitions."), (0, "21 Baccarat table; physical characteristics.")]


def test_a_line_that_is_not_a_clause_is_refused_with_its_line_number():
    tool = _compliance_tool()
    try:
        tool.read_index(f"# comment\n{'631a'}.1 Definitions.\n999z.1 Nothing\n")
    except SystemExit as refused:
        assert str(refused) == ("tools/regulation-index.txt line 3: '999z.1' is not a clause "
                                "of 631a, 631c, 627b or 681a")
    else:
        raise AssertionError("a bogus index line was accepted")


def test_each_commands_role_is_documented_as_the_daemon_enforces_it():
    """docs/control-api.md and docs/deployment.md carry the table the daemon's own
    registrations generate (one role per command)."""
    result = subprocess.run([sys.executable, "tools/control_roles.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_module_map_is_the_codes_own():
    """docs/architecture.md's module map lists every module of controller/ with its
    docstring's first sentence (tools/module_map.py)."""
    result = subprocess.run([sys.executable, "tools/module_map.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for module in ("controller/daemon.py", "controller/commands/play.py",
                   "controller/errors.py", "controller/memory/boot_check.py"):
        assert f"| `{module}` |" in text
