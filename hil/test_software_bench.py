"""The device tests' bench variants, on every change, against the software bench.

``python -m hil.software_rig`` runs each simulator in its own process behind
the interfaces a hardware bench has (a shoe and a display on serial ports, a
card feeder and a relay board on sockets, the shuffler on a USB bus); the
device tests run against it as a vendor runs them against a bench, with
``TABLE_HIL_RIG`` naming its file, in a pytest of their own. They run twice
against the same bench: the second run finds the shoe part-dealt and the relays
where the first left them, as a bench's next night does.

(No name here contains the selector of the bench variants, so selecting them
with ``-k`` does not start this second bench.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.conftest import SIM_ONLY_REASON
from hil.mock_pins import PinBridgeClient
from hil.rig import RIG_ENV, load_rig
from hil.software_rig import SoftwareRig

pytestmark = [pytest.mark.hil, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parent.parent
DEVICE_TESTS = sorted(str(p) for p in (REPO / "hil").glob("test_devices*.py"))
SELECT = "rig"
"""pytest -k selector of the bench variants (their ids end in [rig...])."""
BENCH_VARIANTS, PASSING = 42, 8
"""The device tests' bench variants; the 8 that inject no fault pass on the software bench
(the shoe's cards and health, the display's meters and win light, both seat tests, the
shuffler's verified batch and health), the other 34 skip."""


@pytest.fixture(scope="module")
def bench() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="hil-bench-", dir="/tmp"))  # Unix sockets: 108 bytes
    try:
        with SoftwareRig(folder / "rig.toml") as rig:
            yield rig.rig_file
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_pytest(rig_file: Path, report: Path, *args: str) -> dict[str, tuple[str, str]]:
    """Run pytest with TABLE_HIL_RIG=rig_file; each test's outcome and message by its id."""
    env = {**os.environ, RIG_ENV: str(rig_file)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--junitxml={report}", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=200)
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}.py::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, child.get("message", "")
                break
        if outcomes.get(test_id, ("passed", ""))[0] == "passed":  # a teardown error wins
            outcomes[test_id] = (outcome, message)
    return outcomes


def test_the_device_tests_pass_twice_against_the_same_software_bench(
        bench: Path, tmp_path: Path) -> None:
    for run in (1, 2):
        outcomes = run_pytest(bench, tmp_path / f"run{run}.xml", *DEVICE_TESTS, "-k", SELECT)
        assert len(outcomes) == BENCH_VARIANTS and all("[rig" in t for t in outcomes)
        passed = [t for t, (outcome, _) in outcomes.items() if outcome == "passed"]
        others = {t: o for t, o in outcomes.items() if t not in passed}
        assert len(passed) == PASSING, f"run {run}: {others}"
        assert all(outcome == "skipped" and message.endswith(SIM_ONLY_REASON)
                   for outcome, message in others.values()), f"run {run}: {others}"


LEAKY_TEST = '''
from hil.conftest import SeatBench


def test_places_a_chip_and_walks_away(seat_bench: SeatBench) -> None:
    with seat_bench.pins() as pins:
        pins.press(seat_bench.seats[3].sensor_pin)
'''


def test_a_bench_test_that_leaves_a_relay_closed_fails_and_the_relay_is_opened(
        bench: Path, tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("from hil.conftest import *  # noqa: F403\n")
    (tmp_path / "test_leaky.py").write_text(LEAKY_TEST)
    outcomes = run_pytest(bench, tmp_path / "leaky.xml", "--rootdir", str(tmp_path),
                          str(tmp_path / "test_leaky.py"), "-k", SELECT)
    assert outcomes["test_leaky.py::test_places_a_chip_and_walks_away[rig]"] == (
        "error", "failed on teardown with \"AssertionError: the test left the rig changed: "
        "seat 3's sensor relay (pin 6) left pressed (line low); the test found it released "
        "(line high)\nassert not [\"seat 3's sensor relay (pin 6) left pressed (line low); "
        "the test found it released (line high)\"]\"")
    gpio = load_rig(bench).gpio
    assert gpio is not None
    with PinBridgeClient(gpio.relay_socket) as board:
        assert board.read_output(6) is True  # opened again for the next test
