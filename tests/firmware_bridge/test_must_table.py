"""docs/conformance.md's MUST table (issue 28): every requirement of docs/protocol.md has a
row, every row names a check of the kit or a test of the host that exists, and every
requirement the kit checks has a broken device build (hil.misbehaviour) that proves its
check can fail."""

from __future__ import annotations

from pathlib import Path

from firmware_bridge.conformance import CHECKS
from hil.misbehaviour import MISBEHAVIOURS
from tests.firmware_bridge.must_table import KEY_WORD, TAG, must_table, protocol_ids, protocol_units

ROOT = Path(__file__).resolve().parents[2]


def test_every_must_in_the_spec_carries_an_id() -> None:
    untagged = [unit.strip()[:120] for unit in protocol_units()
                if len(KEY_WORD.findall(unit)) > len(TAG.findall(unit))]
    assert untagged == []


def test_the_table_has_exactly_one_row_per_requirement() -> None:
    assert sorted(must_table()) == sorted(protocol_ids())
    assert len(protocol_ids()) == 45


def test_every_row_names_a_check_or_a_host_test_that_exists() -> None:
    missing = []
    for must, checks in must_table().items():
        assert checks, must
        for check in checks:
            if check.startswith("tests/"):
                path, name = check.split("::")
                if f"def {name}(" not in (ROOT / path).read_text(encoding="utf-8"):
                    missing.append((must, check))
            elif check not in CHECKS:
                missing.append((must, check))
    assert missing == []


def test_every_check_of_the_kit_tests_some_requirement() -> None:
    named = {check for checks in must_table().values() for check in checks}
    assert set(CHECKS) <= named


def test_every_requirement_the_kit_checks_has_a_broken_build_failing_its_first_check() -> None:
    table = must_table()
    kit_checked = {must for must, checks in table.items() if not checks[0].startswith("tests/")}
    broken = {must: [name for name, m in MISBEHAVIOURS.items() if must in m.musts]
              for must in kit_checked}
    assert [must for must, names in broken.items() if not names] == []
    for name, misbehaviour in MISBEHAVIOURS.items():
        allowed = {check for must in misbehaviour.musts for check in table[must]}
        assert misbehaviour.check in allowed, name


def test_a_must_added_without_an_id_or_a_row_is_caught(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the detector itself: a new requirement sentence with no id is reported
    from tests.firmware_bridge import must_table as module

    docs = tmp_path / "docs"
    docs.mkdir()
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    (docs / "protocol.md").write_text(
        text + "\n- A device MUST blink twice on power-up.\n", encoding="utf-8")
    (docs / "conformance.md").write_text(
        (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(module, "DOCS", docs)
    assert [u.strip() for u in module.protocol_units()
            if len(KEY_WORD.findall(u)) > len(TAG.findall(u))] == [
        "- A device MUST blink twice on power-up."]
    (docs / "protocol.md").write_text(
        text + "\n- A device MUST blink twice on power-up [M-9.9].\n", encoding="utf-8")
    assert set(module.protocol_ids()) - set(module.must_table()) == {"M-9.9"}
