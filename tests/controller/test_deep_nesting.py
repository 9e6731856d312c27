"""Text nested too deeply to decode, wherever the table reads JSON or TOML it did not write
in this process: Python's decoders recurse once a level, and a line of 100,000 '[' raised
RecursionError, which no reader caught. Each reader now answers it as the bad input it
is: the daemon's start names the store or the anchor, `tablectl config validate` and
`tabled` name the file, the pit page drops the message, `tablectl replay` names the line.
Each test failed on the code before (RecursionError out of the call)."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

import pytest
import structlog

from cards import Card
from controller.cli import exitcodes
from controller.cli import main as tablectl
from controller.daemon import EXIT_CONFIG
from controller.daemon import main as tabled
from controller.display.pit import PitBoard
from controller.memory import critical
from controller.memory.lifecycle import init_store, open_store, paths_for
from controller.text_files import loads_json, read_toml

DEEP = "[" * 100_000


def test_loads_json_raises_value_error_for_deep_nesting() -> None:
    with pytest.raises(ValueError, match=r"^JSON nested too deeply to read$"):
        loads_json(DEEP)
    assert loads_json('{"a": [[1]]}') == {"a": [[1]]}


def test_a_configuration_nested_too_deeply_is_named_by_tablectl_and_tabled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "table.toml"
    path.write_text(f"a = {DEEP}\n", encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(tomllib.TOMLDecodeError, match="nested too deeply"):
        read_toml(path)
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    assert (f"{path}: not valid TOML: arrays or tables nested too deeply to read (no setting "
            "nests more than a few)") in " ".join(capsys.readouterr().out.split())
    assert tabled(["--config", str(path)]) == EXIT_CONFIG
    assert "  - not valid TOML: arrays or tables nested too deeply to read" in (
        capsys.readouterr().err)


def test_a_set_override_nested_too_deeply_is_a_bare_word_refused_by_its_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--set KEY=VALUE` reads VALUE as TOML, else as a bare word: a value of 100,000 '['
    raised RecursionError out of the override (a traceback); it is a bare word, refused by
    its key like any other, quoted by its start and end."""
    config = Path(__file__).resolve().parents[2] / "config" / "simulated-table.toml"
    assert tabled(["--config", str(config), "--set", f"store.path={tmp_path / 't.sqlite'}",
                   "--set", f"table.seats={DEEP}"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "  - table.seats = '[[[[" in err and "...[[[[" in err
    assert max(len(line) for line in err.splitlines()) < 1000


def test_an_anchor_nested_too_deeply_is_a_damaged_anchor(tmp_path: Path) -> None:
    store = init_store(str(tmp_path / "table.sqlite"), operator="test", table_id="T1")
    store.close()
    paths = paths_for(str(tmp_path / "table.sqlite"))
    paths.anchor.write_text('"commit_no": ' + DEEP, encoding="utf-8")
    with pytest.raises(critical.IntegrityError) as refused:
        open_store(str(tmp_path / "table.sqlite"))
    assert (refused.value.check, refused.value.detail) == (
        "anchor", f"{paths.anchor} is damaged or was not written with this table's key")


def test_a_chain_checkpoint_nested_too_deeply_is_named_not_a_traceback(tmp_path: Path) -> None:
    """A checkpoint row added with plain sqlite3 around the digest triggers (no key): the
    store's start names the edit (the meta table's rows), where it raised RecursionError."""
    store = init_store(str(tmp_path / "table.sqlite"), operator="test", table_id="T1")
    store.close()
    db = sqlite3.connect(tmp_path / "table.sqlite")
    triggers = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND "
                          "tbl_name = 'meta'").fetchall()
    for name, _ in triggers:
        db.execute(f'DROP TRIGGER "{name}"')
    db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (critical.CHECKPOINT_META, DEEP))
    for _, sql in triggers:
        db.execute(sql)
    db.commit()
    db.close()
    with pytest.raises(critical.IntegrityError) as refused:
        open_store(str(tmp_path / "table.sqlite"))
    assert (refused.value.check, refused.value.detail) == (
        "table meta", "2 rows sealed, 3 found (rows deleted or inserted)")


def test_the_pit_page_drops_a_message_nested_too_deeply() -> None:
    board = PitBoard("casino", "pit-1")
    with structlog.testing.capture_logs() as logs:
        assert board.apply("casino/pit-1/tables/PIT-01/status", DEEP.encode()) is None
    assert [(e["event"], e["topic"]) for e in logs] == [
        ("pit_message_unreadable", "casino/pit-1/tables/PIT-01/status")]
    assert board.tables == {}


def test_a_card_list_line_is_quoted_by_its_start_and_end() -> None:
    with pytest.raises(ValueError) as refused:
        Card.parse(DEEP)
    assert str(refused.value) == (
        "card '[[[[[[[[[[[[[[[[[[[[[[[['...'[[[[[[[[' (100000 characters): rank "
        "'[[[[[[[[[[[[[[[[[[[[[[[['...'[[[[[[[[' (99999 characters) is not one of "
        "A,2-10,J,Q,K")
    with pytest.raises(ValueError, match=r"^card 'K': expected rank then suit"):
        Card.parse("K")


@pytest.mark.parametrize("payload", ["not json", "[1]", DEEP, b"\xff\xfe"])
def test_an_exported_stores_damaged_first_record_names_no_epoch(
        tmp_path: Path, payload: str | bytes) -> None:
    """`tablewitness verify --store` reads the epoch from an exported store's first record,
    without the key: a damaged record (not JSON, not an object, nested too deeply, not
    UTF-8) raised out of the auditor's tool; it now names no epoch, and the witness's
    current registration is compared."""
    from controller.witness.cli import store_epoch

    store = init_store(str(tmp_path / "table.sqlite"), operator="test", table_id="T1")
    store.close()
    db = sqlite3.connect(tmp_path / "table.sqlite")
    try:
        db.execute("UPDATE events SET payload = ? WHERE seq = 1", (payload,))
        assert store_epoch(db) is None
    finally:
        db.close()
