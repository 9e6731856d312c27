"""Run the conformance suite and write what a vendor sends back: JSON and plain text."""

from __future__ import annotations

import json
import platform
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

from firmware_bridge.conformance.checks import CHECKS, SCENARIOS, Context, faults, judge_whole_run
from firmware_bridge.conformance.checks_1_2 import LAST_1_2, SCENARIOS_1_2
from firmware_bridge.conformance.prober import Prober, ProbeError
from firmware_bridge.conformance.wire import Wire
from firmware_bridge.link import LinkTiming
from firmware_bridge.messages import DeviceKind

PASS, FAIL, NOT_RUN = "pass", "fail", "not run"
SPEC_REVISION = "1.2"
"""The revision of docs/protocol.md the suite checks (1.2 has no capability bit of its own)."""

CONFORMS, DOES_NOT_CONFORM, INCOMPLETE = "CONFORMS", "DOES NOT CONFORM", "INCOMPLETE"
NO_DEVICE = "NO DEVICE ANSWERED"
NOT_A_DEVICE = "NOT A PROTOCOL DEVICE"
"""Run outcomes; the last two end the run before any check (nothing to check against)."""


@dataclass(frozen=True)
class Verdict:
    check: str
    section: str
    rule: str
    result: str  # PASS, FAIL or NOT_RUN
    detail: str


@dataclass
class Report:
    device_kind: str
    port: str
    baudrate: int
    protocol: str = SPEC_REVISION
    device: dict[str, object] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    started: str = ""
    duration_s: float = 0.0
    host: str = field(default_factory=platform.node)
    slack_s: float = 0.0
    presence: str = ""  # set when the run stopped at the presence probe: NO_DEVICE, NOT_A_DEVICE

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.result == FAIL]

    @property
    def passed(self) -> bool:
        return (not self.presence and not self.failed
                and all(v.result == PASS for v in self.verdicts))

    @property
    def outcome(self) -> str:
        if self.presence:
            return self.presence
        return CONFORMS if self.passed else DOES_NOT_CONFORM if self.failed else INCOMPLETE

    def summary(self) -> str:
        if self.presence:
            return f"{self.presence}: {self.device.get('presence', '')}"
        counts = {r: sum(v.result == r for v in self.verdicts) for r in (PASS, FAIL, NOT_RUN)}
        return (f"{self.outcome} to protocol {self.protocol}: {counts[PASS]} passed, "
                f"{counts[FAIL]} failed, {counts[NOT_RUN]} not run")

    def to_json(self) -> str:
        data = asdict(self)
        data["summary"] = self.summary()
        data["outcome"] = self.outcome
        return json.dumps(data, indent=2, sort_keys=False)

    def to_text(self) -> str:
        lines = [f"Device conformance report: {self.device_kind} on {self.port} at {self.baudrate} baud",
                 f"protocol {self.protocol} (docs/protocol.md), run {self.started} on {self.host}, "
                 f"{self.duration_s:.1f} s, timing slack {self.slack_s:.3f} s"]
        for key, value in self.device.items():
            lines.append(f"  {key}: {value}")
        lines.append("")
        width = max(len(v.check) for v in self.verdicts) if self.verdicts else 10
        for v in self.verdicts:
            lines.append(f"{v.result.upper():<8} {v.check:<{width}}  ({v.section}) {v.detail}")
            if v.result == FAIL:
                lines.append(f"{'':<8} {'':<{width}}  rule: {v.rule}")
        lines += ["", self.summary()]
        return "\n".join(lines) + "\n"


def run_suite(wire: Wire, kind: DeviceKind, baudrate: int, *, port: str = "") -> Report:
    """Every check against the device behind ``wire``; never raises for device behaviour."""
    timing = LinkTiming.for_baudrate(baudrate)
    prober = Prober(wire, timing, kind)
    ctx = Context(prober, kind, baudrate)
    report = Report(kind.name.lower(), port, baudrate,
                    started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    slack_s=wire.slack)
    start = wire.now()
    found: dict[str, Verdict] = {}
    presence, heard = _presence(prober)
    if presence:
        report.presence = presence
        report.device = {"presence": heard}
        report.duration_s = wire.now() - start
        return report

    def record(check: str, passed: bool | None, detail: str) -> None:
        spec = CHECKS[check]
        result = NOT_RUN if passed is None else PASS if passed else FAIL
        found[check] = Verdict(check, spec.section, spec.rule, result, detail)

    for scenario, checks in _in_order():
        if not any(CHECKS[c].applies_to(kind) for c in checks):
            continue
        try:
            for check, passed, detail in scenario(ctx):
                record(check, passed, detail)
        except ProbeError as exc:
            for check in checks:
                if check not in found:
                    record(check, False, f"{scenario.__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a suite bug is reported, never a crash
            for check in checks:
                if check not in found:
                    record(check, False, f"{scenario.__name__}: suite error {exc!r}: "
                           f"{traceback.format_exc(limit=2).splitlines()[-1]}")
    for check, passed, detail in judge_whole_run(ctx):
        record(check, passed, detail)
    report.verdicts = [found[c] for c in CHECKS if c in found and CHECKS[c].applies_to(kind)]
    hello = prober.device_hello
    if hello is not None:
        report.device = {"serial_number": hello.serial_number,
                         "firmware_version": hello.firmware_version,
                         "protocol_version": hello.protocol_version,
                         "capabilities": f"0x{hello.capabilities:08X}"}
    report.duration_s = wire.now() - start
    return report


def _in_order() -> list[tuple[Any, tuple[str, ...]]]:
    """1.1's scenarios with 1.2's after the message checks: before those that make the
    device fail (retransmission, silence) or refuse; a 1.0 Refuse last of all."""
    split = [scenario for scenario, _ in SCENARIOS].index(faults)
    return [*SCENARIOS[:split], *SCENARIOS_1_2, *SCENARIOS[split:], *LAST_1_2]


def _presence(prober: Prober) -> tuple[str, str]:
    """RESET and listen: ("", what was heard) if a valid frame came back, else the outcome
    that ends the run: nothing at all, or bytes that are no frame of this protocol."""
    wait = prober.timing.handshake_timeout + prober.wire.slack
    deadline = prober.now() + wait
    while prober.now() < deadline and not any(rx.frame is not None for rx in prober.log):
        prober.reset()
        prober.pump(min(prober.timing.reset_interval, max(0.0, deadline - prober.now())),
                    lambda new: any(rx.frame is not None for rx in new))
    frames = [rx for rx in prober.log if rx.frame is not None]
    if frames:
        return "", f"{frames[0].describe()} after {frames[0].time - prober.log[0].time:.3f} s"
    if prober.bytes_in == 0:
        return NO_DEVICE, (f"not one byte came back in {wait:.1f} s of RESETs: check the "
                           "cable, the port, the device's power and --baud")
    errors = [rx.error for rx in prober.log if rx.error is not None]
    first = f" (first error: {errors[0]})" if errors else ""
    return NOT_A_DEVICE, (f"{prober.bytes_in} bytes came back in {wait:.1f} s, none of them a "
                          f"valid frame{first}: wrong baud rate, or not a device of this "
                          "protocol")
