"""tablectl's numbers are bounded before anything is asked of the daemon: a guided test's
--timeout of nan or -1 ended the test at once, reporting that no card was read, inf set no
deadline at all, --cards -3 stopped before the first card, --seats 0 showed no seat.
Each is now a bad argument naming what is allowed (controller/cli/arg_types.py)."""

from __future__ import annotations

import pytest

from controller.cli import exitcodes, main


@pytest.mark.parametrize(("argv", "said"), [
    (["test", "shoe", "--timeout", "nan"], "argument --timeout: 'nan': allowed: 0.1 to 86400 "
                                           "seconds"),
    (["test", "shoe", "--timeout", "inf"], "argument --timeout: 'inf': allowed: 0.1 to 86400 "
                                           "seconds"),
    (["test", "lockout", "--timeout", "-1"], "argument --timeout: '-1': allowed: 0.1 to 86400"),
    (["test", "shuffler", "--timeout", "1e9"], "argument --timeout: '1e9': allowed: 0.1 to "
                                               "86400"),
    (["test", "shoe", "--cards", "-3"], "argument --cards: '-3': allowed: a number of cards, 0 "
                                        "for no limit, 0 to 10000"),
    (["test", "shoe", "--cards", "9" * 5000], "argument --cards: '99999999999999999999999999"),
    (["test", "sensors", "--seats", "0"], "argument --seats: '0': allowed: a number of seats, "
                                          "1 to 14"),
    (["test", "sensors", "--seats", "\u0661\u0662"], "argument --seats: '\u0661\u0662': allowed:"),
    # 10**20 raised OverflowError out of the store's query (a traceback).
    (["replay", "--store", "x.sqlite", "--round", "9" * 20, "config.toml"],
     "argument --round: '99999999999999999999': allowed: a round id, 1 to 1000000000000"),
    (["replay", "--store", "x.sqlite", "--shoe", "0", "config.toml"],
     "argument --shoe: '0': allowed: a shoe number, 1 to 1000000000000"),
    # 100 million shoes ran for days; a unit of 0 cents was refused only after the parse.
    (["simulate", "--shoes", "100000000", "config.toml"],
     "argument --shoes: '100000000': allowed: a number of shoes, 1 to 100000"),
    (["replay", "--cards", "cards.txt", "--unit-cents", "0", "config.toml"],
     "argument --unit-cents: '0': allowed: cents, 1 to 1000000000000")])
def test_a_guided_tests_number_out_of_range_is_a_bad_argument(tmp_path, capsys, argv, said):
    """Refused with no daemon at the socket: the arguments are read first."""
    assert main([*argv, "--socket", str(tmp_path / "none.sock")]) == exitcodes.BAD_ARGUMENTS
    err = capsys.readouterr().err
    assert said in err, err
    assert max(len(line) for line in err.splitlines()) < 300


def test_the_bounds_themselves_are_allowed():
    from controller.cli.arg_types import seconds, whole

    assert seconds(0.1, 86_400)("0.1") == 0.1
    assert seconds(0.1, 86_400)("86400") == 86_400.0
    assert whole(0, 10_000, "cards")("0") == 0
    assert whole(0, 10_000, "cards")("10000") == 10_000
    assert whole(1, 14, "seats")(" 14 ") == 14
