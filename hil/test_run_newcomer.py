"""`./run-simulated-table` as a newcomer uses it: the same --workdir twice, a table kept
running for tablectl, the log path it prints, and no retained MQTT messages left behind."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from hil.mqtt_cleanup import clear_retained
from hil.table_harness import TableHarness
from tests.progressive.conftest import MQTT_HOST, MQTT_PORT, service_required

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 240  # one 8-deck shoe takes about 10 s here; generous for a loaded machine


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hil.run", *argv], cwd=ROOT, text=True,
                          capture_output=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "NO_COLOR": "1"})


def test_the_same_workdir_twice_continues_the_table(tmp_path):
    workdir = tmp_path / "sim"
    first = _run("--workdir", str(workdir), "--seed", "3")
    assert first.returncode == 0, first.stdout + first.stderr
    log = workdir / "tabled.log"
    assert first.stdout.splitlines()[0] == ("Simulated table from config/simulated-table.toml; "
                                            f"daemon log: {log}")
    assert log.stat().st_size > 0  # the log it named is there after the run
    second = _run("--workdir", str(workdir), "--seed", "3")
    assert second.returncode == 0, second.stdout + second.stderr
    assert (f"Continuing the table in {workdir} (state end_of_shoe, 1 shoe(s) played): 1 more, "
            "dealt with seed '3/1'") in second.stdout
    # Every refusal is printed as one (table_harness: "wager refused at seat N: reply"). No
    # search for a bare "409": the dashboard's random port was once 40949.
    assert "wager refused" not in second.stdout
    shoes = re.search(r"^Shoes: (\d+)\s+Rounds: (\d+)", second.stdout, re.M)
    assert shoes is not None and shoes[1] == "1" and int(shoes[2]) > 0
    assert "Balance check (table + seats): $0.00 OK" in second.stdout
    # The second shoe is a new shoe of the same table, with other cards.
    first_round = [line for line in first.stdout.splitlines() if line.startswith("Round  1 ")]
    second_round = [line for line in second.stdout.splitlines() if line.startswith("Round  1 ")]
    assert first_round and second_round and first_round != second_round


def test_a_table_left_in_the_middle_of_a_shoe_is_refused_with_the_reason(tmp_path):
    workdir = tmp_path / "sim"

    async def leave_mid_shoe() -> None:
        async with TableHarness(ROOT / "config" / "simulated-table.toml", workdir,
                                seed=5) as table:
            await table.play(shoes=1, until=lambda result: len(result.rounds) >= 2)

    asyncio.run(leave_mid_shoe())
    again = _run("--workdir", str(workdir))
    assert again.returncode == 2, again.stdout + again.stderr
    refusal = re.search(rf"^The table in {re.escape(str(workdir))} stopped in state ([A-Z_]+): "
                        r"it cannot be continued here \(the simulated shoe's cards went with "
                        r"the last run\)\. Use a new --workdir, or delete .+ to start that "
                        r"table again\.$", again.stdout, re.M)
    assert refusal is not None, again.stdout
    assert refusal[1] not in ("CLOSED", "END_OF_SHOE", "SHUFFLING", "CUT")
    assert "wager refused" not in again.stdout and "Round " not in again.stdout


def _as_from_a_terminal() -> None:
    """Ctrl-C reaches a command typed at a terminal even when the test suite itself was
    started in the background, where SIGINT is ignored and every child inherits that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_keep_running_prints_the_tablectl_line_that_works():
    process = subprocess.Popen([sys.executable, "-m", "hil.run", "--keep-running"], cwd=ROOT,
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env={**os.environ, "NO_COLOR": "1"},
                               preexec_fn=_as_from_a_terminal)
    assert process.stdout is not None
    try:
        first = process.stdout.readline()
        log = ROOT / "var" / "simulated-table.log"
        assert first == f"Simulated table from config/simulated-table.toml; daemon log: {log}\n"
        line = ""
        for text in process.stdout:
            if "TABLECTL_SOCKET=" in text:
                line = text.strip()
                break
        tablectl = Path(sys.executable).parent / "tablectl"
        program = str(tablectl) if tablectl.exists() else f"{sys.executable} -m controller.cli"
        assert re.fullmatch(rf"TABLECTL_SOCKET=/\S+/control\.sock {re.escape(program)} status",
                            line), line
        done = subprocess.run(line, shell=True, cwd="/", capture_output=True, text=True,
                              timeout=60, env={**os.environ, "NO_COLOR": "1"})
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[:2] == [
            "Table SIM-BAC-01: END OF SHOE",
            "  waiting for:      a new shoe: shuffle the next batch"]
    finally:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    # Ctrl-C ends the wait, not the run: the table stops (with the daemon and pages it
    # started), then the summary and the balance check the shoes were played for.
    assert "\nStopping the simulated table.\n" in rest
    assert rest.rstrip().endswith("Balance check (table + seats): $0.00 OK"), rest
    assert process.returncode == 0
    assert log.stat().st_size > 0  # the log it named outlives the scratch folder


def test_sigterm_stops_the_kept_table_and_what_it_started():
    process = subprocess.Popen([sys.executable, "-m", "hil.run", "--keep-running"], cwd=ROOT,
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env={**os.environ, "NO_COLOR": "1"})
    assert process.stdout is not None
    socket_path = ""
    try:
        for text in process.stdout:
            if "TABLECTL_SOCKET=" in text:
                socket_path = text.split()[0].removeprefix("TABLECTL_SOCKET=")
                break
        assert Path(socket_path).is_socket(), socket_path
    finally:
        process.terminate()
        rest, _ = process.communicate(timeout=60)
    # SIGTERM stops it as Ctrl-C does: the summary and the balance check still printed.
    assert rest.rstrip().endswith("Balance check (table + seats): $0.00 OK"), rest
    assert process.returncode == 0
    # The daemon went with it: its control socket is gone with the scratch folder.
    assert not Path(socket_path).exists()


def test_retained_meter_messages_are_cleared():
    service_required("Mosquitto", MQTT_HOST, MQTT_PORT)
    import paho.mqtt.client as mqtt

    table = f"T-{uuid.uuid4().hex[:10]}"  # this run's own topics on the shared broker
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(MQTT_HOST, MQTT_PORT)
    client.loop_start()
    topics = [f"casino/test/tables/{table}/progressive/heavenly9/{level}"
              for level in ("1", "2", "mystery")]
    for topic in topics:
        client.publish(topic, b'{"amount_cents": 100}', qos=1, retain=True).wait_for_publish(10)
    client.loop_stop()
    client.disconnect()
    assert clear_retained(MQTT_HOST, MQTT_PORT, "casino", "test", table) == sorted(topics)
    assert clear_retained(MQTT_HOST, MQTT_PORT, "casino", "test", table) == []


def test_a_configuration_of_their_own_that_is_wrong_is_named_not_a_traceback(tmp_path):
    """`./run-simulated-table --config FILE` read the table's id before anything checked
    the file: one without [table] ended in KeyError, one not in UTF-8 in
    UnicodeDecodeError. The daemon's own check names both (exit 6, as tabled's)."""
    no_table = tmp_path / "no-table.toml"
    no_table.write_text("x = 1\n")
    not_utf8 = tmp_path / "latin1.toml"
    not_utf8.write_bytes(b"# caf\xe9\n")
    for path, problem in (
            (no_table, "  - table = (missing): required table\n"),
            (not_utf8, "  - not valid TOML: not UTF-8 text: byte 0xe9 at line 1, column 6 (a "
                       "TOML file is UTF-8: save it in that encoding)\n")):
        done = _run("--config", str(path), "--workdir", str(tmp_path / path.stem))
        assert done.returncode == 6, done.stdout + done.stderr
        assert problem in done.stderr and "Traceback" not in done.stderr
