"""The device conformance kit (firmware_bridge.conformance) against the simulators.

On simulated time (conformance.wire.SimulatedWire): every simulator conforms at 9600,
57600 and 115200 baud; every deliberately broken simulator (hil.misbehaviour, one
MUST broken each) fails exactly the check of the rule it breaks; a protocol 1.0
device fails exactly what 1.1 added.  On real time, once: `tablectl conformance` over
a pseudo-terminal against the pty shoe simulator writes a passing JSON and text report.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path

import pytest

from cards import BackColour
from controller.cli import main
from firmware_bridge.conformance import CHECKS, run_suite
from firmware_bridge.conformance.report import FAIL, PASS, Report
from firmware_bridge.conformance.wire import SimulatedWire
from firmware_bridge.messages import DeviceKind, FaultCode
from hil.misbehaviour import MISBEHAVIOURS, broken_endpoint, legacy_endpoint
from hil.shoe_sim import SimulatedShoe, build_stack
from hil.sim_firmware import make_model

DEVICES = [DeviceKind.SHOE, DeviceKind.SHUFFLER, DeviceKind.DISPLAY]
BAUDS = [9600, 57600, 115200]
BROKEN_BAUD = 115200
"""Broken simulators run at 115200: "retransmit_too_early" resends every 4 ms, faster than
a frame crosses a 9600-baud line, which (rightly) breaks every check at that rate."""


def _run(kind: DeviceKind, baud: int, **model: object) -> Report:
    return run_suite(SimulatedWire(make_model(kind, baudrate=baud, **model), baud), kind, baud,  # type: ignore[arg-type]
                     port=f"simulated {kind.name.lower()}")


@pytest.mark.parametrize("baud", BAUDS)
@pytest.mark.parametrize("kind", DEVICES, ids=lambda k: k.name.lower())
def test_every_simulator_conforms(kind: DeviceKind, baud: int) -> None:
    report = _run(kind, baud)
    assert [(v.check, v.result) for v in report.verdicts] == [(c, PASS) for c in CHECKS], (
        report.to_text())
    assert report.passed and report.summary() == (
        f"CONFORMS to protocol 1.1: {len(CHECKS)} passed, 0 failed, 0 not run")


@pytest.mark.parametrize("kind", DEVICES, ids=lambda k: k.name.lower())
@pytest.mark.parametrize("name", sorted(MISBEHAVIOURS))
def test_each_broken_simulator_fails_exactly_its_check(name: str, kind: DeviceKind) -> None:
    report = _run(kind, BROKEN_BAUD, endpoint_factory=broken_endpoint(name))
    failed = {v.check for v in report.verdicts if v.result == FAIL}
    assert failed == {MISBEHAVIOURS[name].check}, report.to_text()


def test_every_check_is_broken_by_some_simulator() -> None:
    # no check is left that nothing shows able to fail
    assert {m.check for m in MISBEHAVIOURS.values()} == set(CHECKS)


@pytest.mark.parametrize(("baud", "extra"), [(9600, {"timing.keepalive"}), (115200, set())])
def test_a_protocol_1_0_device_fails_exactly_what_1_1_added(baud: int, extra: set[str]) -> None:
    report = _run(DeviceKind.SHOE, baud, endpoint_factory=legacy_endpoint)
    assert {v.check for v in report.failed} == {
        "version.announces_1_1", "handshake.stray_first", "refusal.numbering",
        "retransmission.nak_not_counted"} | extra


def test_report_json_and_text_name_every_check() -> None:
    report = _run(DeviceKind.DISPLAY, 57600, endpoint_factory=broken_endpoint("window_8"))
    data = json.loads(report.to_json())
    assert (data["device_kind"], data["baudrate"], data["protocol"]) == ("display", 57600, "1.1")
    assert data["device"]["serial_number"] == "SIM-DISP-0001"
    assert data["summary"] == (
        f"DOES NOT CONFORM to protocol 1.1: {len(CHECKS) - 1} passed, 1 failed, 0 not run")
    window = next(v for v in data["verdicts"] if v["check"] == "window.limit")
    assert (window["result"], window["section"]) == ("fail", "5.3")
    assert window["detail"] == (
        "6 DATA frames in flight without acknowledgement: [1, 2, 3, 4, 5, 6]")
    text = report.to_text()
    for check in CHECKS:
        assert check in text
    assert "rule: at most 4 DATA frames are unacknowledged at a time" in text


def test_cli_rejects_bad_arguments_with_a_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "shoe", "/dev/null-shoe", "--baud", "1234"]) == 2
    assert "--baud 1234 is not a standard rate" in capsys.readouterr().err
    assert main(["conformance", "shoe", str(tmp_path / "missing"), "-o", str(tmp_path)]) == 2
    assert "cannot open serial port" in capsys.readouterr().err
    assert main(["conformance", "shuffler", "usb:zz:1", "-o", str(tmp_path)]) == 2
    assert "expected usb:VID:PID in hex" in capsys.readouterr().err
    assert main(["conformance", "display", "/dev/null", "--slack", "-1"]) == 2
    assert "--slack -1.0 must be 0..5 seconds" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_tablectl_conformance_on_a_serial_port_passes_the_pty_shoe(tmp_path: Path) -> None:
    # real time, through pyserial, against the pty simulator the daemon's tests use
    stack, cover = build_stack(1, random.Random(2))
    sim = SimulatedShoe(stack, BackColour.RED, cover)
    sim.active_faults[FaultCode.SHOE_LID_OPEN] = "lid open"  # the operator opened the lid
    await sim.start()
    try:
        code = await asyncio.to_thread(
            main, ["conformance", "shoe", sim.port, "--baud", "115200", "-o", str(tmp_path),
                   "--fault-active", "--slack", "2"])  # the machine may be busy: wide margins
    finally:
        await sim.stop()
    reports = sorted(tmp_path.iterdir())
    assert [p.suffix for p in reports] == [".json", ".txt"]
    data = json.loads(reports[0].read_text())
    assert {v["check"]: v["result"] for v in data["verdicts"]} == {c: "pass" for c in CHECKS}, (
        reports[1].read_text())
    assert code == 0
    assert reports[1].read_text().splitlines()[-1] == (
        f"CONFORMS to protocol 1.1: {len(CHECKS)} passed, 0 failed, 0 not run")


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.skipif(os.environ.get("TABLE_CONFORMANCE_REALTIME") != "1",
                    reason="40 s of real time: set TABLE_CONFORMANCE_REALTIME=1 (docs/conformance.md)")
def test_the_usb_wire_passes_the_threaded_usb_shuffler_in_real_time() -> None:
    from firmware_bridge.conformance.wire import UsbWire
    from hil.usb_shuffler import add_shuffler, get_backend, reset_backend

    device = add_shuffler()
    wire = UsbWire(0x1209, 0x0001, backend=get_backend(),
                   operator=lambda action: action == "fault" and (device.set_door(True) or True))
    wire.slack = 0.5  # the machine is shared
    try:
        report = run_suite(wire, DeviceKind.SHUFFLER, 115200, port="usb:1209:0001")
    finally:
        wire.close()
        device.close()
        reset_backend()
    assert report.passed, report.to_text()
