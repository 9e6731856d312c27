"""tablectl's command line as git's: options common to every command before or after it,
one JSON document for every --json answer (refusals too), Ctrl-C without a traceback, and
a support bundle that reads the store itself when the daemon is down."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller import tablectl
from controller.cli import exitcodes, main
from controller.memory.lifecycle import init_store, open_store

ROOT = Path(__file__).resolve().parents[2]


def test_socket_and_json_before_the_command_work_as_after_it(fake, capsys):
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    after = capsys.readouterr().out
    assert main(["--socket", fake.socket, "status"]) == exitcodes.OK
    assert capsys.readouterr().out == after
    assert main(["--json", "--socket", fake.socket, "status"]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out)["table_id"] == "SIM-BAC-01"
    # Before the command and after a subcommand's own subcommand alike.
    assert main(["--socket", fake.socket, "--json", "events", "verify"]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_a_global_option_the_command_does_not_take_is_a_bad_argument(capsys):
    rc = main(["--socket", "/run/x.sock", "par-sheet", "config/baccarat-8deck.toml"])
    assert rc == exitcodes.BAD_ARGUMENTS
    assert capsys.readouterr().err.endswith(
        "tablectl par-sheet: error: --socket: 'tablectl par-sheet' does not take it\n")


def test_json_before_an_offline_command_that_offers_it(capsys):
    assert main(["--json", "par-sheet", str(ROOT / "config" / "baccarat-8deck.toml")]) == 0
    assert json.loads(capsys.readouterr().out)["game"]["family"] == "baccarat"


@pytest.mark.parametrize(("argv", "said"), [
    (["simulate", "--seed", "9" * 5000, "config/simulated-table.toml"],
     "tablectl simulate: error: argument --seed: invalid int value: "
     "'999999999999999999999999'...'99999999' (5000 characters)\n"),
    (["z" * 5000], "tablectl: error: argument COMMAND: invalid choice: "
     "'zzzzzzzzzzzzzzzzzzzzzzzz'...'zzzzzzzz' (5000 characters) (choose from 'par-sheet', ")])
def test_a_huge_argument_is_quoted_by_its_start_and_end(capsys, argv, said):
    """argparse quotes the value it refuses: a 5,000-digit --seed or a 5,000-letter command
    printed a 5,000-character line (and JSON answer)."""
    assert main(argv) == exitcodes.BAD_ARGUMENTS
    err = capsys.readouterr().err
    assert said in err
    assert max(len(line) for line in err.splitlines()) < 400


def test_a_bad_argument_with_json_is_a_json_answer(capsys):
    assert main(["--json", "status", "--bogus"]) == exitcodes.BAD_ARGUMENTS
    out, err = capsys.readouterr()
    assert json.loads(out) == {"ok": False, "error": "unrecognized arguments: --bogus",
                               "reason": "bad_arguments"}
    assert "tablectl: error: unrecognized arguments: --bogus" in err


def test_a_wrong_pin_with_json_is_a_json_refusal(fake, capsys, monkeypatch):
    fake.register("acknowledge_fault", lambda a: fake.status, supervisor=True)
    monkeypatch.setattr("sys.stdin", io.StringIO("0000\n"))
    rc = main(["fault", "acknowledge", "--supervisor", "ana", "--pin-stdin", "--json",
               "--socket", fake.socket])
    assert rc == exitcodes.REFUSED
    out = capsys.readouterr().out
    # (The in-process daemon logs its pin_failed to the same stdout, first.)
    assert json.loads(out[out.index("{\n"):]) == {
        "ok": False, "reason": "unauthorised",
        "error": "supervisor 'ana' and that PIN were not accepted; nothing was acknowledged"}


def test_an_empty_pin_with_json_is_a_json_answer(fake, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    rc = main(["jackpot", "validate", "3", "--supervisor", "ana", "--pin-stdin", "--json",
               "--socket", fake.socket])
    assert rc == exitcodes.BAD_ARGUMENTS
    assert json.loads(capsys.readouterr().out) == {
        "ok": False, "error": "no supervisor PIN was given", "reason": "no_pin"}


def test_a_command_that_fails_without_saying_so_in_json_still_answers_json(fake, capsys):
    """`events --limit 0 --json`: the command's own check speaks on stderr only; main()
    keeps --json's promise with that message."""
    assert main(["events", "--limit", "0", "--json", "--socket", fake.socket]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "ok": False, "exit_code": 2, "error": "--limit must be a whole number 1 to 100000",
        "reason": "failed"}


def test_a_long_refusal_with_json_is_the_whole_message_not_its_last_wrapped_line(
        capsys, monkeypatch):
    """A refusal longer than the terminal is wrapped for people on stderr; --json's error
    is the whole of it. Commands wrapped it themselves before writing it, and the JSON
    answer took the last wrapped line (at 40 columns: "database")."""
    monkeypatch.setenv("COLUMNS", "40")
    assert main(["--json", "replay", "config/simulated-table.toml", "--store", "README.md",
                 "--round", "1"]) == exitcodes.BAD_ARGUMENTS
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "ok": False, "exit_code": 2, "reason": "failed",
        "error": "tablectl replay: README.md is not a table store: it is not an SQLite database"}
    assert err == ("tablectl replay: README.md is not a\n  table store: it is not an SQLite\n"
                   "  database\n")


def test_an_unknown_filter_value_is_the_daemons_bad_request_exit_2(fake, capsys, at_80_columns):
    rc = main(["events", "--severity", "loud", "--socket", fake.socket])
    assert rc == exitcodes.BAD_ARGUMENTS
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("tablectl: the daemon refused: 'severity' = 'loud': allowed: info, warning,\n"
                   "  error, critical (bad_request)\n")
    assert main(["events", "--severity", "loud", "--json", "--socket", fake.socket]) == 2
    assert json.loads(capsys.readouterr().out)["reason"] == "bad_request"


def _catches_sigint(pid: int) -> bool:
    """Whether process PID has a handler for SIGINT (its SigCgt mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    return False


def _interrupted(argv: list[str], after_s: float) -> subprocess.CompletedProcess[str]:
    """tablectl ARGV as a process, sent Ctrl-C's SIGINT after `after_s`: its entry point as
    the installed `tablectl` calls it (`python -m controller.cli` imports the CLI's
    package before any of its code runs, where a Ctrl-C is Python's traceback)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "controller.tablectl", *argv], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        # As a terminal starts it: SIGINT raises KeyboardInterrupt (a background job of a
        # non-interactive shell would have it ignored).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Until the interpreter has installed its SIGINT handler: before that, SIG_DFL kills the
    # process (-2), which on a busy machine can take longer than `after_s` to start. Between
    # the fork and the exec the child is still a copy of this process, which catches SIGINT
    # too: its command line tells the two apart.
    while process.poll() is None and not (
            b"controller.tablectl" in Path(f"/proc/{process.pid}/cmdline").read_bytes()
            and _catches_sigint(process.pid)):
        time.sleep(0.01)
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def test_ctrl_c_during_simulate_is_one_line_and_exit_130():
    done = _interrupted(["simulate", "config/baccarat-8deck.toml", "--shoes", "100000"], 3.0)
    assert (done.returncode, done.stderr) == (exitcodes.INTERRUPTED, "\ninterrupted\n")


def test_ctrl_c_with_json_is_a_json_answer_too():
    done = _interrupted(["--json", "par-sheet", "config/baccarat-8deck.toml"], 0.5)
    interrupted = {"ok": False, "exit_code": 130, "error": "interrupted",
                   "reason": "interrupted"}
    answer = json.loads(done.stdout)  # whatever happened: one whole JSON document
    if done.returncode == exitcodes.OK:  # the sheet was quicker than the signal
        assert answer["game"]["family"] == "baccarat"
    elif done.returncode == exitcodes.INTERRUPTED:
        assert answer == interrupted
    else:
        # Ended by SIGINT itself (a shell reports it as 130 too), after the answer was
        # written: the signal came while the interpreter was exiting, after it had given
        # SIGINT back to the default (the sheet or the interrupted answer, whole either
        # way). A Ctrl-C caught after it left code made from a text no longer ends so
        # (1 run in 5 on a loaded machine before: the test below).
        assert done.returncode == -signal.SIGINT, (done.returncode, done.stderr)
        assert answer == interrupted or answer["game"]["family"] == "baccarat", answer


_INTERRUPTED_IN_A_TEXT = """
import sys

import controller.cli

def interrupted_in_a_text(argv):
    # As a Ctrl-C lands in a method that dataclasses made from a source text.
    exec("raise KeyboardInterrupt")

controller.cli.main = interrupted_in_a_text
from controller.tablectl import main

sys.exit(main(sys.argv[1:]))
"""

def _run_under_python_m(tmp_path: Path, handler: str | None, *argv: str
                        ) -> subprocess.CompletedProcess[str]:
    """The probe above as `python -m` runs it, its CLI's body `handler` if one is given."""
    probe = _INTERRUPTED_IN_A_TEXT
    if handler is not None:
        probe = probe.replace('\n    exec("raise KeyboardInterrupt")\n', handler)
    (tmp_path / "interrupt_probe.py").write_text(probe, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "interrupt_probe", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _caught_by_the_cli(says: str, status: int) -> str:
    """A CLI body that catches the Ctrl-C itself, says `says` on stderr, returns `status`."""
    return (f'\n    try:\n        exec("raise KeyboardInterrupt")\n'
            f'    except KeyboardInterrupt:\n        print({says!r}, file=sys.stderr)\n'
            f'        return {status}\n')


@pytest.mark.parametrize("caught_by", ["tablectl", "cli"])
def test_ctrl_c_in_code_made_from_text_still_exits_130_under_python_m(tmp_path, caught_by):
    """CPython marks a KeyboardInterrupt that left an exec'd text as unhandled even once
    caught, and under `python -m` then ended the process by SIGINT (-2) after tablectl's
    answer: the entry point clears the mark (interrupted.clear_unhandled_mark)."""
    # "cli": the CLI's own handler answers it, as during a command.
    handler = _caught_by_the_cli("\ninterrupted", 130) if caught_by == "cli" else None
    done = _run_under_python_m(tmp_path, handler, "--json", "status")
    assert (done.returncode, done.stderr) == (exitcodes.INTERRUPTED, "\ninterrupted\n")
    if caught_by == "tablectl":
        assert json.loads(done.stdout) == {"ok": False, "exit_code": 130,
                                           "error": "interrupted", "reason": "interrupted"}


def test_a_caught_ctrl_c_that_ends_with_another_status_keeps_it_under_python_m(tmp_path):
    """A Ctrl-C at the PIN prompt ("no PIN entered"), or one that ends `events --follow`
    with what it saw: tablectl's own status, not the SIGINT CPython's mark would add."""
    done = _run_under_python_m(tmp_path, _caught_by_the_cli("tablectl: no PIN entered", 2),
                               "status")
    assert (done.returncode, done.stderr) == (2, "tablectl: no PIN entered\n")


@pytest.fixture
def table_store(tmp_path: Path) -> Path:
    path = tmp_path / "table.sqlite"
    init_store(str(path), operator="test", table_id="T1").close()
    store = open_store(str(path))
    with store.transaction():
        store.append_entry("round_settled", {"result": {"winner": "banker",
                                                        "banker": ["KS", "7D"]}}, round_id=4)
    store.close()
    return path


def test_support_bundle_with_the_daemon_down_reads_and_checks_the_store(table_store, tmp_path,
                                                                       capsys, monkeypatch):
    config = tmp_path / "etc" / "table.toml"
    config.parent.mkdir()
    config.write_text(f'[table]\nid = "T1"\n[store]\npath = "{table_store}"\n',
                      encoding="utf-8")
    before = table_store.read_bytes()
    bundle = tmp_path / "bundle.txt"
    monkeypatch.chdir(config.parent.parent)  # the configuration given relative to here
    rc = main(["support-bundle", "--socket", str(tmp_path / "none.sock"), "--config",
               "etc/table.toml", "--log", str(config), "-o", str(bundle)])
    assert rc == exitcodes.OK
    text = bundle.read_text(encoding="utf-8")
    assert f"\n== last 3 events, read from the store {table_store}\n" in text
    assert "round_settled [round 4]\n        result={banker: [KS, 7D], winner: banker}\n" in text
    assert (f"\n== critical-memory check of the store (offline, every entry)\n{'=' * 78}\n"
            f"critical memory OK: 3 log entries verified in {table_store} (every entry)\n"
            ) in text
    assert "== configuration: etc/table.toml (secrets removed)" in text
    assert f'path = "{table_store}"' in text
    assert table_store.read_bytes() == before  # read from a copy
    capsys.readouterr()


def test_support_bundle_with_the_daemon_down_names_a_store_it_cannot_find(tmp_path, capsys):
    bundle = tmp_path / "bundle.txt"
    rc = main(["support-bundle", "--socket", str(tmp_path / "none.sock"), "--store",
               str(tmp_path / "gone.sqlite"), "--log", str(bundle), "-o", str(bundle)])
    assert rc == exitcodes.OK
    assert (f"(not collected: no store file at {tmp_path / 'gone.sqlite'}; give --store PATH)"
            in bundle.read_text(encoding="utf-8"))
    capsys.readouterr()


def test_ctrl_c_before_the_cli_runs_is_the_same_one_line_and_answer(monkeypatch, capsys):
    """A Ctrl-C while tablectl starts (its imports, its parser: a tenth of a second and more
    on a busy machine) is answered by the entry point as the CLI answers one during a
    command: one line, 130, the same JSON answer; no traceback."""
    import controller.cli

    def interrupted_inside(argv):  # noqa: ANN001, ANN202 - a command that Ctrl-C stops
        raise KeyboardInterrupt

    def interrupted_before(argv):  # noqa: ANN001, ANN202 - the CLI's start that Ctrl-C stops
        raise KeyboardInterrupt

    argv = ["--json", "par-sheet", "config/baccarat-8deck.toml"]
    # The CLI's own answer, for a command it was running (the parser, built at each call,
    # hands par-sheet to the module's function).
    monkeypatch.setattr("controller.cli.rules_commands._par_sheet", interrupted_inside)
    assert main(argv) == exitcodes.INTERRUPTED
    inside = capsys.readouterr()
    # The entry point's, for a Ctrl-C before the CLI's main caught anything.
    monkeypatch.setattr(controller.cli, "main", interrupted_before)
    assert tablectl.main(argv) == exitcodes.INTERRUPTED == 130
    before = capsys.readouterr()
    assert (before.out, before.err) == (inside.out, inside.err) == (
        '{\n  "ok": false,\n  "exit_code": 130,\n  "error": "interrupted",\n'
        '  "reason": "interrupted"\n}\n', "\ninterrupted\n")
    # Without --json: the line alone.
    assert tablectl.main(argv[1:]) == 130
    assert capsys.readouterr() == ("", "\ninterrupted\n")
