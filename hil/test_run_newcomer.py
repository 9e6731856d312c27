"""`./run-simulated-table` as a newcomer uses it: the same --workdir twice, a table kept
running for tablectl, the log path it prints, and no retained MQTT messages left behind."""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from hil.mqtt_cleanup import clear_retained
from hil.table_harness import TableHarness
from hil.witness_sim import postgres_answers
from tests.progressive.conftest import MQTT_HOST, MQTT_PORT, service_required
from tests.test_quickstart_installs import modules_only_the_tests_install

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 240  # one 8-deck shoe takes about 10 s here; generous for a loaded machine


REFUSER = """import sys

REFUSED = frozenset({refused!r})


class RefuseTheTestsOwnPackages:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            raise ModuleNotFoundError(
                f"No module named {{name!r}} (only the test extra installs it)", name=name)
        return None


sys.meta_path.insert(0, RefuseTheTestsOwnPackages)
"""


@functools.cache
def _as_installed_by_the_demo() -> dict[str, str]:
    """The environment of a demo run as a fresh clone's ./run-simulated-table installs it:
    a sitecustomize.py on PYTHONPATH refuses, in every Python process started with it (the
    daemon and the display service too), the modules of the packages only the test extra
    installs. Before 2026-12-07 the demo imported psycopg, which only the test extra had,
    and these tests, run with the test install, could not see it."""
    folder = Path(tempfile.mkdtemp(prefix="demo-install-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "sitecustomize.py").write_text(
        REFUSER.format(refused=modules_only_the_tests_install()), encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "NO_COLOR": "1", "PYTHONPATH": path}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hil.run", *argv], cwd=ROOT, text=True,
                          capture_output=True, timeout=RUN_TIMEOUT_S,
                          env=_as_installed_by_the_demo())


def test_the_demos_environment_refuses_the_tests_own_packages():
    assert "pytest" in modules_only_the_tests_install()
    done = subprocess.run([sys.executable, "-c", "import pytest"], capture_output=True,
                          text=True, timeout=60, env=_as_installed_by_the_demo())
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith(
        "ModuleNotFoundError: No module named 'pytest' (only the test extra installs it)")
    fine = subprocess.run([sys.executable, "-c", "import psycopg, gpiozero, serial"],
                          capture_output=True, text=True, timeout=60,
                          env=_as_installed_by_the_demo())
    assert fine.returncode == 0, fine.stderr


def test_the_same_workdir_twice_continues_the_table(tmp_path):
    workdir = tmp_path / "sim"
    first = _run("--workdir", str(workdir), "--seed", "3")
    assert first.returncode == 0, first.stdout + first.stderr
    log = workdir / "tabled.log"
    assert first.stdout.splitlines()[0] == ("Simulated table from config/simulated-table.toml; "
                                            f"daemon log: {log}")
    assert log.stat().st_size > 0  # the log it named is there after the run
    # With only the demo's own install, a new table is witnessed where PostgreSQL answers
    # (without psycopg it ran unwitnessed, saying so: the run passed, the witness was gone).
    absent = postgres_answers()
    if absent is None:
        assert "\nWitness (tablewitness verify): table SIM-BAC-01: 1 registration(s), " \
            in first.stdout, first.stdout
    else:
        assert os.environ.get("CI") != "true", f"CI=true requires PostgreSQL: {absent}"
        assert f"The table is unwitnessed: {absent}; " in first.stdout, first.stdout
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
                               env=_as_installed_by_the_demo(),
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
                               env=_as_installed_by_the_demo())
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
