"""Run the conformance suite and write what a vendor sends back: JSON and plain text."""

from __future__ import annotations

import json
import platform
import time
import traceback
from dataclasses import asdict, dataclass, field

from firmware_bridge.conformance.checks import CHECKS, SCENARIOS, Context, judge_whole_run
from firmware_bridge.conformance.prober import Prober, ProbeError
from firmware_bridge.conformance.wire import Wire
from firmware_bridge.link import LinkTiming
from firmware_bridge.messages import PROTOCOL_MINOR, PROTOCOL_VERSION, DeviceKind

PASS, FAIL, NOT_RUN = "pass", "fail", "not run"


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
    protocol: str = f"{PROTOCOL_VERSION}.{PROTOCOL_MINOR}"
    device: dict[str, object] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    started: str = ""
    duration_s: float = 0.0
    host: str = field(default_factory=platform.node)

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.result == FAIL]

    @property
    def passed(self) -> bool:
        return not self.failed and all(v.result == PASS for v in self.verdicts)

    def summary(self) -> str:
        counts = {r: sum(v.result == r for v in self.verdicts) for r in (PASS, FAIL, NOT_RUN)}
        outcome = "CONFORMS" if self.passed else "DOES NOT CONFORM" if self.failed else "INCOMPLETE"
        return (f"{outcome} to protocol {self.protocol}: {counts[PASS]} passed, {counts[FAIL]} "
                f"failed, {counts[NOT_RUN]} not run")

    def to_json(self) -> str:
        data = asdict(self)
        data["summary"] = self.summary()
        return json.dumps(data, indent=2, sort_keys=False)

    def to_text(self) -> str:
        lines = [f"Device conformance report: {self.device_kind} on {self.port} at {self.baudrate} baud",
                 f"protocol {self.protocol} (docs/protocol.md), run {self.started} on {self.host}, "
                 f"{self.duration_s:.1f} s"]
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
                    started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    start = wire.now()
    found: dict[str, Verdict] = {}

    def record(check: str, passed: bool | None, detail: str) -> None:
        spec = CHECKS[check]
        result = NOT_RUN if passed is None else PASS if passed else FAIL
        found[check] = Verdict(check, spec.section, spec.rule, result, detail)

    for scenario, checks in SCENARIOS:
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
    report.verdicts = [found[c] for c in CHECKS if c in found]
    hello = prober.device_hello
    if hello is not None:
        report.device = {"serial_number": hello.serial_number,
                         "firmware_version": hello.firmware_version,
                         "protocol_version": hello.protocol_version,
                         "capabilities": f"0x{hello.capabilities:08X}"}
    report.duration_s = wire.now() - start
    return report
