"""`tablectl irregularity player-third`: the floor's 631a.15(c) declaration over the socket."""

from __future__ import annotations

import io

from controller.cli import exitcodes, main
from controller.control import ControlError
from tests.cli.conftest import SUPERVISOR_PIN


def test_a_disclosed_player_third_card_is_declared_631a_15_c(fake, capsys, monkeypatch):
    def declare(a):
        fake.status.update(state="betting_open")
        return {"ruling": {"action": "discard_with_one_more", "section": "631a.15(c)(1)",
                           "changed": True, "card": "5♥",
                           "decision": "discard the card and one more card drawn face down, "
                                       "undisclosed (631a.15(c)(1))"}, **fake.status}
    fake.register("disclosed_player_third", declare, supervisor=True)
    monkeypatch.setattr("sys.stdin", io.StringIO(SUPERVISOR_PIN + "\n"))
    rc = main(["irregularity", "player-third", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    assert rc == exitcodes.OK
    assert capsys.readouterr().out.startswith(
        "5♥: discard the card and one more card drawn face down, undisclosed (631a.15(c)(1)); "
        "applied\nTable SIM-BAC-01: BETTING OPEN")


def test_a_card_that_cannot_be_one_is_refused_with_the_reason_631a_15_c(fake, capsys,
                                                                         monkeypatch):
    def refuse(a):
        raise ControlError("the Player's Hand it followed has 3 cards (631a.15(c))")
    fake.register("disclosed_player_third", refuse, supervisor=True)
    monkeypatch.setattr("sys.stdin", io.StringIO("0000\n"))
    assert main(["irregularity", "player-third", "--supervisor", "ana", "--pin-stdin",
                 "--socket", fake.socket]) == exitcodes.REFUSED
    assert "nothing was declared" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(SUPERVISOR_PIN + "\n"))
    rc = main(["irregularity", "player-third", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    err = " ".join(capsys.readouterr().err.split())  # wrapped at 80 columns
    assert (rc, "the Player's Hand it followed has 3 cards (631a.15(c))" in err) == (
        exitcodes.REFUSED, True), err
