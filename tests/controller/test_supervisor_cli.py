"""`tablectl supervisor hash-pin` makes hashes the daemon's [supervisors] table accepts."""

from __future__ import annotations

import io

from controller.auth import verify_pin
from controller.cli import exitcodes, main


def test_hash_pin_prints_a_verifiable_line(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("97531\n"))
    assert main(["supervisor", "hash-pin", "ana", "--pin-stdin"]) == exitcodes.OK
    name, _, quoted = capsys.readouterr().out.strip().partition(" = ")
    assert name == "ana"
    assert verify_pin("97531", quoted.strip('"'))
    assert not verify_pin("97530", quoted.strip('"'))


def test_a_pin_with_letters_is_refused(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("12ab\n"))
    assert main(["supervisor", "hash-pin", "ana", "--pin-stdin"]) == exitcodes.BAD_ARGUMENTS
    assert capsys.readouterr().err == "error: a PIN is 4 to 12 digits 0-9\n"


def test_a_pin_in_other_scripts_digits_is_refused(monkeypatch, capsys):
    """Arabic-Indic digits: decimal to Python, but not what a table's keypad types."""
    monkeypatch.setattr("sys.stdin", io.StringIO("\u0669\u0667\u0665\u0663\u0661\n"))
    assert main(["supervisor", "hash-pin", "ana", "--pin-stdin"]) == exitcodes.BAD_ARGUMENTS
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "error: a PIN is 4 to 12 digits 0-9\n")
