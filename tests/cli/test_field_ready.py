"""tablectl at 3 a.m.: cut pipes, versions, what the table waits for, JSON errors, guided
tests that cannot pass by silence, a wrong store path, simulate's progress, short event
lines and the support bundle."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller import __version__
from controller.cli import exitcodes, main
from controller.cli import output as output_module
from controller.cli.support_commands import redact_config
from controller.cli.event_commands import event_line

ROOT = Path(__file__).resolve().parents[2]


def _tablectl(*argv: str, stdin: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "0"}
    return subprocess.Popen([sys.executable, "-m", "controller.cli", *argv], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _read_one_line_then_hang_up(process: subprocess.Popen[str], stdin: str | None = None
                                ) -> tuple[str, str, int]:
    """What `tablectl ... | head -1` does to tablectl: one line read, then the pipe closed."""
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read()
    return first, err, process.wait(timeout=60)


@pytest.mark.parametrize("argv, stdin, first", [
    (["simulate", "config/baccarat-8deck.toml", "--shoes", "40"], None, "shoe 1 round   1: "),
    (["status"], None, "Table SIM-BAC-01: BETTING OPEN"),
    (["fault", "acknowledge", "--supervisor", "ana", "--pin-stdin"], "2468\n",
     "fault acknowledged by ana"),
], ids=["simulate", "status", "fault-acknowledge"])
def test_output_cut_short_ends_quietly(fake, argv, stdin, first):
    fake.register("acknowledge_fault", lambda a: fake.status, supervisor=True)
    # Enough output that it cannot all fit in the pipe before the reader hangs up.
    fake.status["config"] = "/etc/tabled/table.toml\n" + "x" * 200_000
    process = _tablectl(*argv, "--socket", fake.socket, stdin=stdin) if argv[0] != "simulate" \
        else _tablectl(*argv)
    line, err, code = _read_one_line_then_hang_up(process, stdin)
    assert line.startswith(first)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert err == ""
    assert code == exitcodes.OK


def test_versions_of_tablectl_tabled_and_the_running_daemon(fake, capsys):
    from controller.daemon import main as tabled_main

    assert main(["--version"]) == exitcodes.OK
    assert capsys.readouterr().out == f"tablectl {__version__}\n"
    with pytest.raises(SystemExit) as done:
        tabled_main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"tabled {__version__}\n"
    fake.status["version"] = "0.1.0"
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    assert "  daemon version:   0.1.0\n" in capsys.readouterr().out


@pytest.mark.parametrize("state, waiting", [
    ("shuffling", ["  waiting for:      the shuffler to finish shuffling, counting and verifying the",
                   "                    batch (a real shuffler takes about 90 s; 'tablectl test",
                   "                    shuffler' shows its count)"]),
    ("cut", ["  waiting for:      the dealer: offer the cut, insert the cover cards and load",
             "                    the shoe (the shoe reports it when the cards are in; then",
             "                    the first card is burned)"]),
])
def test_status_says_what_the_table_waits_for_wrapped_at_80_columns(fake, capsys, at_80_columns, state,
                                                                    waiting):
    """Piped (no terminal, no $COLUMNS) the width is 80: words whole, a hanging indent."""
    fake.status.update(state=state, round={"round_id": None, "round_no": 0, "wagers": [],
                                           "next": None})
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Table SIM-BAC-01: {state.upper()}"
    assert lines[1:4] == waiting


def test_status_wraps_to_the_columns_it_is_given(fake, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    fake.status.update(state="cut", round={"round_id": None, "round_no": 0, "wagers": [],
                                           "next": None},
                       fault={"device": "shoe", "code": "shoe_lid_open",
                              "detail": "the shoe's lid is open",
                              "action": "close the shoe's lid; cards are not read while it "
                                        "is open (docs/faults.md shoe_lid_open)"})
    main(["status", "--socket", fake.socket])
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 60
    assert ("  waiting for:      the dealer: offer the cut, insert the\n"
            "                    cover cards and load the shoe (the shoe\n") in out
    assert ("  Action: close the shoe's lid; cards are not read while it\n"
            "          is open (docs/faults.md shoe_lid_open)\n") in out


@pytest.mark.parametrize("argv", [["status"], ["devices"], ["events"], ["test", "shoe"]])
def test_json_with_no_daemon_is_a_json_error_on_stdout(tmp_path, capsys, argv):
    path = tmp_path / "control.sock"
    assert main([*argv, "--json", "--socket", str(path)]) == exitcodes.DAEMON_NOT_RUNNING
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "ok": False, "reason": "missing", "socket": str(path),
        "error": f"the daemon is not running: there is no control socket at {path}\n"
                 "  (if tabled uses another socket, pass --socket PATH or set TABLECTL_SOCKET)"}
    assert "systemctl status tabled" in captured.err


def test_shoe_test_with_no_card_before_the_timeout_fails(fake, capsys):
    assert main(["test", "shoe", "--timeout", "0.3", "--socket", fake.socket]) \
        == exitcodes.FAILURE
    captured = capsys.readouterr()
    assert "shoe self-test: PASS - shoe ok" in captured.out
    assert "no card was read in 0.3 s - draw a card slowly" in captured.err


def test_lights_with_input_closed_says_it_needs_a_terminal(fake, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["test", "lights", "--socket", fake.socket]) == exitcodes.BAD_ARGUMENTS
    captured = capsys.readouterr()
    assert "NOT confirmed" not in captured.out
    assert "'test lights' asks the technician what they saw and needs a terminal" \
        in captured.err
    assert main(["test", "lights", "--json", "--socket", fake.socket]) == exitcodes.BAD_ARGUMENTS
    answer = json.loads(capsys.readouterr().out)
    assert (answer["ok"], answer["reason"]) == (False, "needs_terminal")


def test_sensors_json_detail_agrees_with_the_verdict(fake, capsys):
    fake.status["seats"] = 3
    fake.on_next_subscribe(*[("late_sensor_change", {"seat": s, "present": p},
                              {"severity": "warning", "device": "seats"})
                             for s in (1, 3) for p in (True, False)])
    assert main(["test", "sensors", "--json", "--timeout", "1", "--socket", fake.socket]) \
        == exitcodes.FAILURE
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] is False
    assert result["detail"] == "seats never seen with a wager: 2"
    assert result["self_test"] == {"passed": True, "detail": "seats ok"}
    assert (result["touched"], result["never_seen"], result["still_present"]) == ([1, 3], [2], [])


def test_verify_of_the_readme_says_not_a_table_store(capsys):
    readme = ROOT / "README.md"
    assert main(["events", "verify", "--store", str(readme)]) == exitcodes.BAD_ARGUMENTS
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"tablectl: {readme} is not a table store: it is not an "
                                   "SQLite database; give the path of the table's store")


def test_verify_of_another_sqlite_database_says_not_a_table_store(tmp_path, capsys):
    import sqlite3

    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE notes (text)")
    db.commit()
    db.close()
    before = other.read_bytes()
    assert main(["events", "verify", "--store", str(other)]) == exitcodes.BAD_ARGUMENTS
    assert (f"{other} is not a table store: an SQLite database without the store's events, "
            "rounds table(s)") in capsys.readouterr().err
    assert other.read_bytes() == before  # the evidence is untouched


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_simulate_shows_progress_on_stderr_and_money_in_dollars(capsys, monkeypatch):
    monkeypatch.setattr(output_module, "PROGRESS_DELAY_S", 0.0)  # as if a second had passed
    stderr = _Terminal()
    monkeypatch.setattr("sys.stderr", stderr)
    assert main(["simulate", str(ROOT / "config" / "baccarat-8deck.toml"), "--shoes", "3",
                 "--seed", "5"]) == exitcodes.OK
    out = capsys.readouterr().out
    bars = stderr.getvalue()
    assert "\rsimulating shoes [" in bars
    assert "] 0/3" in bars and "] 2/3" in bars and bars.endswith("\r\x1b[K")
    lines = out.splitlines()
    assert all(" net " in line and "$" in line.split(" net ")[1].split()[0]
               for line in lines[:-1])
    assert not any(line.split(" net ")[1].split()[0].endswith("c") for line in lines[:-1])
    total = sum(int(round(float(line.split(" net ")[1].split()[0].replace("$", "")
                                .replace(",", "")) * 100)) for line in lines[:-1])
    sign = "+" if total > 0 else "-" if total < 0 else ""
    assert lines[-1] == (f"seat net over all rounds: {sign}${abs(total) // 100:,}."
                         f"{abs(total) % 100:02d}")


def test_event_lines_stay_short_whatever_the_payload():
    settlements = [{"seat": s, "wager": "banker", "amount_cents": 10000, "outcome": "win",
                    "win_cents": 10000, "vigorish_cents": 500, "net_cents": 9500}
                   for s in range(1, 15)]
    event = {"seq": 812, "at": 1763758800.0, "severity": "info", "device": None,
             "kind": "round_settled", "round_id": 41,
             "payload": {"round_id": 41, "winner": "banker", "settlements": settlements,
                         "result": {"player": ["9H", "3C"], "banker": ["KS", "7D"],
                                    "player_total": 2, "banker_total": 7}}}
    assert len(json.dumps(event["payload"])) > 1500
    line = event_line(event)
    settled = ("{seat: 1, wager: banker, amount_cents: 10000, outcome: win, win_cents: 10000, "
               "vigorish_cents: 500, net_cents: 9500}")
    # Values, not keys: the result whole, the settlements cut at 240 characters.
    assert line == ("   812  2025-11-21T21:00:00.000Z  info      -         round_settled "
                    "[round 41]  round_id=41 winner=banker settlements=["
                    + settled + ", " + settled.replace("seat: 1", "seat: 2")[:110]
                    + "… (14 items) result={player: [9H, 3C], banker: [KS, 7D], "
                      "player_total: 2, banker_total: 7}")
    assert len(line) < 520  # of a payload over 1,500 characters
    assert event_line(event, 80).splitlines()[:3] == [
        "   812  2025-11-21T21:00:00.000Z  info      -         round_settled [round 41]",
        "        round_id=41 winner=banker settlements=[{seat: 1, wager: banker,",
        "        amount_cents: 10000, outcome: win, win_cents: 10000, vigorish_cents:"]
    action = "Close the shoe's lid; cards are not read while it is open."
    fault = {**event, "kind": "device_fault", "device": "shoe", "round_id": None,
             "payload": {"code": "shoe_lid_open", "action": action}}
    assert event_line(fault).endswith(f"code=shoe_lid_open action={action}")


SECRET_CONFIG = """\
[table]
id = "T-7"
[gpio]
pin_factory = "lgpio"
lockout_pin = 26
[linked]
dsn = "host=db port=5432 user=tabled password=hunter2"
[mqtt]
url = "mqtt://feed:s3cret@broker.casino:1883"
password = "s3cret"
[supervisors]
# hashed PINs
ana = "pbkdf2_sha256$600000$c2FsdA$aGFzaA"
"""


def test_configuration_in_the_bundle_has_its_secrets_removed():
    assert redact_config(SECRET_CONFIG) == SECRET_CONFIG.replace(
        '"host=db port=5432 user=tabled password=hunter2"', '"<removed>"').replace(
        "feed:s3cret@", "<removed>@").replace('password = "s3cret"', 'password = "<removed>"'
                                             ).replace('"pbkdf2_sha256$600000$c2FsdA$aGFzaA"',
                                                       '"<removed>"')


def test_support_bundle_holds_status_devices_events_log_and_config(fake, tmp_path, capsys):
    config = tmp_path / "table.toml"
    config.write_text(SECRET_CONFIG, encoding="utf-8")
    log = tmp_path / "tabled.log"
    log.write_text('{"event": "ready", "state": "closed"}\n', encoding="utf-8")
    fake.status["config"] = str(config)
    fake.append("card", {"index": 40, "card": "9H", "hand": "player"}, device="shoe")
    bundle = tmp_path / "bundle.txt"
    assert main(["support-bundle", "--socket", fake.socket, "--log", str(log), "-o",
                 str(bundle)]) == exitcodes.OK
    assert capsys.readouterr().out.startswith(f"support bundle written to {bundle} (")
    text = bundle.read_text(encoding="utf-8")
    for heading in ("== status", "== devices", "== last 1 events",
                    "== status, devices and events as JSON",
                    f"== daemon log: {log} (the last 500 lines)",
                    f"== configuration: {config} (secrets removed)"):
        assert f"\n{heading}\n" in text, heading
    assert "Table SIM-BAC-01: BETTING OPEN" in text
    assert "shoe      up    /dev/ttyUSB0" in text
    # Wrapped to the file's 78 columns, the payload under the time.
    assert "card  card=9H\n        hand=player index=40\n" in text
    assert '{"event": "ready", "state": "closed"}' in text
    assert "lockout_pin = 26" in text
    assert "hunter2" not in text and "s3cret" not in text and "pbkdf2" not in text


def test_support_bundle_is_written_with_the_daemon_down(tmp_path, capsys):
    bundle = tmp_path / "bundle.txt"
    missing_config = tmp_path / "none.toml"
    assert main(["support-bundle", "--socket", str(tmp_path / "x.sock"), "--config",
                 str(missing_config), "--log", str(tmp_path / "none.log"), "-o",
                 str(bundle)]) == exitcodes.OK
    text = bundle.read_text(encoding="utf-8")
    assert (f"== daemon\n{'=' * 78}\nnot reachable: the daemon is not running: there is no "
            f"control socket at {tmp_path / 'x.sock'}") in text
    assert f"(not collected: cannot read {tmp_path / 'none.log'}: No such file or directory)" \
        in text
    assert f"(not collected: cannot read {missing_config}: No such file or directory)" in text
