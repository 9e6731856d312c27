"""Game recall, progressive meters and jackpot validation."""

from __future__ import annotations

import io
import json

from controller.cli import exitcodes, main
from tests.cli.conftest import SUPERVISOR_PIN


def test_rounds_show_cards_totals_wagers_and_settlements(fake, capsys):
    assert main(["rounds", "--last", "5", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert ("Round 7 of shoe 3 (id 41)  SETTLED  2025-11-21T21:00:03.120Z") in out
    assert "  cards:  9H P  KS B  3C P  7D B" in out
    assert "  Player  9H 3C       total 2" in out
    assert "  Banker  KS 7D       total 7" in out
    assert "  result: BANKER wins" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["SEAT", "WAGER"])
    assert lines[header + 1].split() == ["1", "banker", "$1,234.56", "win", "$1,234.56",
                                         "$61.73", "+$1,172.83"]
    assert lines[header + 2].split() == ["5", "player", "$100.00", "lose", "$0.00", "$0.00",
                                         "-$100.00"]
    assert ("rounds", {"limit": 5}) in fake.calls


def test_void_round(fake, capsys):
    fake.rounds[0].update(state="void", result={"reason": "cards left the shoe unseen"},
                          settlements=[{"seat": 1, "wager": "banker", "amount_cents": 500,
                                        "outcome": "void", "win_cents": 0,
                                        "vigorish_cents": 0, "net_cents": 0}])
    assert main(["rounds", "--socket", fake.socket]) == exitcodes.OK
    assert "  VOID: cards left the shoe unseen" in capsys.readouterr().out


def test_rounds_json_and_bad_last(fake, capsys):
    assert main(["rounds", "--json", "--socket", fake.socket]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out) == fake.rounds
    assert main(["rounds", "--last", "0", "--socket", fake.socket]) == exitcodes.BAD_ARGUMENTS


def test_meters_on_a_daemon_without_them(fake, capsys):
    assert main(["meters", "--socket", fake.socket]) == exitcodes.UNSUPPORTED
    err = capsys.readouterr().err
    assert "the daemon does not offer the 'meters' command" in err
    assert "daemon said: unknown command 'meters'" in err


def test_meters_rendered_with_money(fake, capsys, at_80_columns):
    fake.register("meters", lambda a: [
        {"progressive": "heavenly9", "game": "baccarat", "level": "mega", "linked": False,
         "reset_cents": 1000000, "increment_percent": "1.5", "section": "631c.6",
         "pending_awards_cents": 0, "amount_cents": 1234567, "awards_count": 2,
         "cumulative_paid_cents": 2500000, "stale": False},
        {"progressive": "mystery", "game": "baccarat", "level": "mystery", "linked": True,
         "reset_cents": 50000, "increment_percent": "0.5", "section": "631c.9",
         "pending_awards_cents": 75000, "trigger_range_cents": [50000, 100000],
         "trigger_commitment": "9f2c", "stale": True}])
    assert main(["meters", "--socket", fake.socket]) == exitcodes.OK
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80  # two tables, each fitting 80 columns
    assert lines[0].split() == ["PROGRESSIVE", "LEVEL", "LINK", "AMOUNT", "RESET", "INCR",
                                "STATE"]
    assert lines[1].split() == ["heavenly9", "mega", "local", "$12,345.67", "$10,000.00",
                                "1.5%", "ok"]
    assert lines[2].split() == ["mystery", "mystery", "linked", "unknown", "$500.00", "0.5%",
                                "STALE"]
    assert lines[3] == ""
    assert lines[4].split() == ["PROGRESSIVE", "LEVEL", "PENDING", "AWARDS", "PAID"]
    assert lines[5].split() == ["heavenly9", "mega", "$0.00", "2", "$25,000.00"]
    assert lines[6].split() == ["mystery", "mystery", "$750.00", "-", "-"]
    assert ("mystery mystery: must hit by $1,000.00 (trigger drawn in $500.00 to $1,000.00,\n"
            "  commitment 9f2c)") in "\n".join(lines)
    assert lines[-2:] == ["STALE: the linked ledger cannot be reached; the amount shown is the "
                          "last one", "  received"]


def test_meters_of_an_unknown_shape_still_shown(fake, capsys):
    fake.register("meters", lambda a: [{"meter": "x", "amount_cents": 1234567}])
    assert main(["meters", "--socket", fake.socket]) == exitcodes.OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["meter", "amount"]
    assert lines[1].split() == ["x", "$12,345.67"]


def test_jackpot_validate_with_pin_on_stdin(fake, capsys, monkeypatch):
    fake.register("validate_award", lambda a: {
        "award_id": a["award_id"], "progressive": "heavenly9", "level": "mega", "round_id": 41,
        "seat": 3, "amount_cents": 2500000, "state": "paid", "label": "K9 suited",
        "section": "631c.6(c)(5)", "validated_by": "ana", "paid_via": "attendant"},
        supervisor=True)
    monkeypatch.setattr("sys.stdin", io.StringIO(SUPERVISOR_PIN + "\n"))
    rc = main(["jackpot", "validate", "17", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    assert rc == exitcodes.OK
    out = capsys.readouterr().out
    assert "award 17 validated by ana" in out
    assert "award 17: heavenly9 mega, seat 3, round 41: $25,000.00  PAID" in out
    assert [args["award_id"] for name, args in fake.calls if name == "validate_award"] == [17]


def test_jackpot_wrong_pin_is_refused(fake, capsys, monkeypatch):
    fake.register("validate_award", lambda a: {}, supervisor=True)
    monkeypatch.setattr("sys.stdin", io.StringIO("0000\n"))
    rc = main(["jackpot", "validate", "17", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    assert rc == exitcodes.REFUSED
    assert "supervisor 'ana' and that PIN were not accepted; nothing was validated" in \
        capsys.readouterr().err
    assert not any(name == "validate_award" for name, _ in fake.calls)


def test_jackpot_pin_prompted_with_getpass(fake, capsys, monkeypatch):
    prompts = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or "")
    rc = main(["jackpot", "validate", "1", "--supervisor", "ana", "--socket", fake.socket])
    assert rc == exitcodes.BAD_ARGUMENTS
    assert prompts == ["PIN for supervisor ana: "]
    assert "an empty PIN is not accepted" in capsys.readouterr().err


def test_jackpot_on_a_daemon_without_progressives(fake, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n"))
    rc = main(["jackpot", "validate", "1", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    assert rc == exitcodes.UNSUPPORTED
    assert "does not offer the 'validate_award' command" in capsys.readouterr().err


def test_jackpot_award_id_is_a_number(capsys):
    assert main(["jackpot", "validate", "A-17", "--supervisor", "ana"]) == \
        exitcodes.BAD_ARGUMENTS
    assert "argument AWARD_ID: 'A-17': allowed: an award id, 1 to 1000000000000" in \
        capsys.readouterr().err


def test_jackpot_pending_awards(fake, capsys):
    fake.register("awards", lambda a: [
        {"award_id": 4, "progressive": "heavenly9", "level": "mega", "round_id": 41, "seat": 3,
         "amount_cents": 2512345, "state": "pending", "label": "suited 3-card 9 tie",
         "section": "631c.2", "pay_order": 1, "validated_by": None, "paid_via": None,
         "linked_claim": None, "claimed": True}])
    assert main(["jackpot", "pending", "--socket", fake.socket]) == exitcodes.OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["AWARD", "PROGRESSIVE", "LEVEL", "ROUND", "SEAT", "AMOUNT",
                                "STATE", "PAYS"]
    assert lines[1].split() == ["4", "heavenly9", "mega", "41", "3", "$25,123.45", "pending",
                                "suited", "3-card", "9", "tie"]
    fake.register("awards", lambda a: [])
    assert main(["jackpot", "pending", "--socket", fake.socket]) == exitcodes.OK
    assert capsys.readouterr().out == "no awards awaiting validation\n"
