"""tablectl's output helpers: money, alignment, colour rules, progress bars; its help."""

from __future__ import annotations

import io

import pytest

from controller.cli import output


class Tty(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("cents", "text"), [
    (0, "$0.00"), (5, "$0.05"), (123456, "$1,234.56"), (-10000, "-$100.00"),
    (100000000, "$1,000,000.00"), (None, "-")])
def test_money(cents, text):
    assert output.money(cents) == text


def test_money_sign():
    assert output.money(117283, sign=True) == "+$1,172.83"
    assert output.money(0, sign=True) == "$0.00"


def test_table_aligns_columns_and_ignores_colour_codes(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    red = "\x1b[31mretrying\x1b[0m"
    text = output.table(["DEVICE", "LINK", "CRC"], [["shoe", red, 12], ["shuffler", "up", 0]],
                        right=[2])
    plain = [output._ANSI.sub("", line) for line in text.splitlines()]
    assert plain == ["DEVICE    LINK      CRC",
                     "shoe      retrying   12",
                     "shuffler  up          0"]


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert output.colour_enabled(Tty())
    assert not output.colour_enabled(io.StringIO())
    assert output.paint("FAIL", "red", stream=Tty()) == "\x1b[31mFAIL\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not output.colour_enabled(Tty())
    assert output.paint("FAIL", "red", stream=Tty()) == "FAIL"


def test_progress_bar_waits_a_second_and_only_on_a_terminal():
    now = [0.0]
    stream = Tty()
    bar = output.ProgressBar("counting", 416, stream=stream, clock=lambda: now[0])
    bar.update(100)
    assert stream.getvalue() == ""  # quick work never shows a bar
    now[0] = 1.5
    bar.update(208)
    assert "counting [" in stream.getvalue()
    assert "] 208/416" in stream.getvalue()
    bar.finish()
    assert stream.getvalue().endswith("\r\x1b[K")
    piped = io.StringIO()
    bar = output.ProgressBar("counting", 416, stream=piped, clock=lambda: now[0] + 5)
    bar.update(416)
    assert piped.getvalue() == ""


def test_duration_and_when():
    assert output.duration(3725.4) == "01:02:05"
    assert output.duration(90061) == "1d 01:01:01"
    assert output.when(1763758803.12) == "2025-11-21T21:00:03.120Z"


def test_generic_renders_unknown_shapes():
    assert output.generic({"seat": 3, "amount_cents": 250}) == "seat:   3\namount: $2.50"


def test_help_breaks_lines_only_at_spaces(monkeypatch, capsys):
    """At 80 columns argparse's own wrapping cut the default key's path at its hyphen."""
    from controller.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["software", "stage", "--help"]) == 0
    assert capsys.readouterr().out.endswith(
        "  --public-key PUBLIC_KEY\n"
        "                        the vendor's public key (default:\n"
        "                        /etc/tabled/release-signing.pub)\n")
